// The add workload in LangGraph.js: createReactAgent over a scripted chat
// model that asks for add(i, 1) K times and then answers "done".
// @langchain/core's fake chat models cannot script tool calls turn by turn,
// so the model is a small BaseChatModel subclass.
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

import { countingAdd, measure, packageVersion, parseK, runMain } from './harness.mjs';

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
  const add = countingAdd();
  const addTool = tool(async (args) => add(args), {
    name: 'add',
    description: 'Add two integers and return their sum to the caller.',
    schema: z.object({ a: z.number().int(), b: z.number().int() }),
  });
  const model = new ScriptedAddModel();
  const agent = createReactAgent({ llm: model, tools: [addTool], prompt: 'You add numbers.' });
  await measure({
    peer: 'langgraph',
    version: packageVersion('@langchain/langgraph'),
    k,
    add,
    runOnce: async (n) => {
      model.reset(n);
      // Each iteration is two graph steps (model, tools) plus the final answer.
      const state = await agent.invoke({ messages: [{ role: 'user', content: 'add' }] }, { recursionLimit: 2 * n + 5 });
      return state.messages.at(-1).content;
    },
  });
});
