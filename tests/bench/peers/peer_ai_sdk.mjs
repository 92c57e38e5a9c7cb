// The add workload in the Vercel AI SDK: generateText with MockLanguageModelV4
// scripted to ask for add(i, 1) K times and then answer "done".
import { generateText, isStepCount, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';

import { countingAdd, measure, packageVersion, parseK, runMain } from './harness.mjs';

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

function scriptedModel() {
  let turn = 0;
  let k = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async () => {
      // The mock records every call's options; drop them, as the agentkit
      // side runs FakeLLM with request recording off.
      model.doGenerateCalls.length = 0;
      const i = turn++;
      if (i < k) {
        return {
          content: [{ type: 'tool-call', toolCallId: `call_${i}`, toolName: 'add', input: JSON.stringify({ a: i, b: 1 }) }],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
    },
  });
  model.reset = (n) => {
    turn = 0;
    k = n;
  };
  return model;
}

runMain(async () => {
  const k = parseK();
  const add = countingAdd();
  const tools = {
    add: tool({
      description: 'Add two integers and return their sum to the caller.',
      inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
      execute: async (args) => add(args),
    }),
  };
  const model = scriptedModel();
  await measure({
    peer: 'ai-sdk',
    version: packageVersion('ai'),
    k,
    add,
    runOnce: async (n) => {
      model.reset(n);
      const result = await generateText({
        model,
        tools,
        system: 'You add numbers.',
        prompt: 'add',
        stopWhen: isStepCount(n + 1),
      });
      return result.text;
    },
  });
});
