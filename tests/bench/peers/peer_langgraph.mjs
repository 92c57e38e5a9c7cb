// The add workload in LangGraph.js: createReactAgent over a scripted chat
// model that asks for add(i, 1) K times and then answers "done".
// @langchain/core's fake chat models cannot script tool calls turn by turn,
// so the model is a small BaseChatModel subclass. In HTTP mode (harness.mjs)
// the model is @langchain/openai's ChatOpenAI (Chat Completions) against
// bench_peers_http's server; to stream, the graph streams its messages.
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

import { chatBaseUrl, countingAdd, httpFields, measure, packageVersion, parseHttp, parseK, perN, runMain } from './harness.mjs';

class ScriptedAddModel extends BaseChatModel {
  constructor() {
    super({});
    this.reset(0);
  }

  reset(k) {
    this.k = k;
    this.turn = 0;
  }

  _llmType() {
    return 'scripted-add';
  }

  // The script does not depend on the tool list, so binding is a no-op.
  bindTools() {
    return this;
  }

  async _generate() {
    const i = this.turn++;
    const message = i < this.k
      ? new AIMessage({ content: '', tool_calls: [{ id: `call_${i}`, name: 'add', args: { a: i, b: 1 }, type: 'tool_call' }] })
      : new AIMessage('done');
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

runMain(async () => {
  const k = parseK();
  const http = parseHttp();
  const add = countingAdd();
  const addTool = tool(async (args) => add(args), {
    name: 'add',
    description: 'Add two integers and return their sum to the caller.',
    schema: z.object({ a: z.number().int(), b: z.number().int() }),
  });
  const agentWith = (llm) => createReactAgent({ llm, tools: [addTool], prompt: 'You add numbers.' });
  const scripted = http ? null : new ScriptedAddModel();
  const scriptedAgent = scripted ? agentWith(scripted) : null;
  const httpAgent = perN((n) => agentWith(new ChatOpenAI({
    model: 'add-model',
    apiKey: 'sk-bench',
    configuration: { baseURL: chatBaseUrl(http, n) },
    useResponsesApi: false,
  })));
  await measure({
    peer: 'langgraph',
    version: packageVersion('@langchain/langgraph'),
    k,
    add,
    extra: httpFields(http, '@langchain/openai'),
    runOnce: async (n) => {
      scripted?.reset(n);
      const agent = scriptedAgent ?? httpAgent(n);
      const input = { messages: [{ role: 'user', content: 'add' }] };
      // Each iteration is two graph steps (model, tools) plus the final answer.
      const config = { recursionLimit: 2 * n + 5 };
      if (http?.stream) {
        // Streaming the messages makes the model stream its reply (ChatOpenAI's
        // streaming: true would instead count tokens with tiktoken after each reply).
        let state;
        for await (const [mode, chunk] of await agent.stream(input, { ...config, streamMode: ['messages', 'values'] })) {
          if (mode === 'values') state = chunk;
        }
        return state.messages.at(-1).content;
      }
      const state = await agent.invoke(input, config);
      return state.messages.at(-1).content;
    },
  });
});
