// Preloaded with `node --require loopback_only.cjs <server>` so a reference
// server in HTTP mode binds 127.0.0.1 only (they listen on every interface by
// default and have no host setting) and reports the port it got on stderr as
// "AGENTKIT_LISTENING <address> <port>" (PORT=0 picks a free port).
'use strict';
const net = require('node:net');

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
  if (isPort) {
    if (typeof args[1] === 'string') args[1] = '127.0.0.1';
    else args.splice(1, 0, '127.0.0.1');
  } else if (first && typeof first === 'object' && !('path' in first)) {
    args[0] = { ...first, host: '127.0.0.1' };
  }
  this.once('listening', () => {
    const address = this.address();
    if (address && typeof address === 'object') {
      process.stderr.write(`AGENTKIT_LISTENING ${address.address} ${address.port}\n`);
    }
  });
  return listen.apply(this, args);
};
