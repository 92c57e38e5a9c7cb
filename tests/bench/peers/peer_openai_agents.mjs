// The add workload in the OpenAI Agents JS SDK: run() over a scripted Model
// that asks for add(i, 1) K times and then answers "done". In HTTP mode
// (harness.mjs) the model is the SDK's OpenAIChatCompletionsModel over an
// `openai` client for bench_peers_http's server (run() with stream: true to
// stream). Tracing is off: its default exporter sends spans to the OpenAI API.
import { Agent, OpenAIChatCompletionsModel, Usage, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';

import { chatBaseUrl, countingAdd, httpFields, measure, packageVersion, parseHttp, parseK, perN, runMain } from './harness.mjs';

class ScriptedAddModel {
  constructor() {
    this.reset(0);
  }

  reset(k) {
    this.k = k;
    this.turn = 0;
  }

  async getResponse() {
    const i = this.turn++;
    const output = i < this.k
      ? [{ type: 'function_call', callId: `call_${i}`, name: 'add', arguments: JSON.stringify({ a: i, b: 1 }), status: 'completed' }]
      : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }];
    return { usage: new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 }), output };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('the add workload does not stream');
  }
}

runMain(async () => {
  const k = parseK();
  const http = parseHttp();
  setTracingDisabled(true);
  const add = countingAdd();
  const addTool = tool({
    name: 'add',
    description: 'Add two integers and return their sum to the caller.',
    parameters: z.object({ a: z.number().int(), b: z.number().int() }),
    execute: async (args) => add(args),
  });
  const scripted = http ? null : new ScriptedAddModel();
  const agentWith = (model) => new Agent({ name: 'adder', instructions: 'You add numbers.', model, tools: [addTool] });
  const scriptedAgent = scripted ? agentWith(scripted) : null;
  const httpAgent = perN((n) => {
    const client = new OpenAI({ baseURL: chatBaseUrl(http, n), apiKey: 'sk-bench' });
    return agentWith(new OpenAIChatCompletionsModel(client, 'add-model'));
  });
  await measure({
    peer: 'openai-agents',
    version: packageVersion('@openai/agents'),
    k,
    add,
    extra: httpFields(http, 'openai'),
    runOnce: async (n) => {
      scripted?.reset(n);
      const agent = scriptedAgent ?? httpAgent(n);
      if (http?.stream) {
        const result = await run(agent, 'add', { maxTurns: n + 1, stream: true });
        await result.completed;
        return result.finalOutput;
      }
      const result = await run(agent, 'add', { maxTurns: n + 1 });
      return result.finalOutput;
    },
  });
});
