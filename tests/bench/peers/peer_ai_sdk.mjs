// The add workload in the Vercel AI SDK: generateText with MockLanguageModelV4
// scripted to ask for add(i, 1) K times and then answer "done". In HTTP mode
// (harness.mjs) the model is @ai-sdk/openai's Chat Completions model against
// bench_peers_http's server, through generateText, or streamText to stream.
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, isStepCount, streamText, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';

import { chatBaseUrl, countingAdd, httpFields, measure, packageVersion, parseHttp, parseK, perN, runMain } from './harness.mjs';

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
  const http = parseHttp();
  const add = countingAdd();
  const tools = {
    add: tool({
      description: 'Add two integers and return their sum to the caller.',
      inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
      execute: async (args) => add(args),
    }),
  };
  const scripted = http ? null : scriptedModel();
  const chatModel = perN((n) => createOpenAI({ baseURL: chatBaseUrl(http, n), apiKey: 'sk-bench' }).chat('add-model'));
  await measure({
    peer: 'ai-sdk',
    version: packageVersion('ai'),
    k,
    add,
    extra: httpFields(http, '@ai-sdk/openai'),
    runOnce: async (n) => {
      scripted?.reset(n);
      const call = {
        model: scripted ?? chatModel(n),
        tools,
        system: 'You add numbers.',
        prompt: 'add',
        stopWhen: isStepCount(n + 1),
      };
      if (http?.stream) return await streamText(call).text;
      const result = await generateText(call);
      return result.text;
    },
  });
});
