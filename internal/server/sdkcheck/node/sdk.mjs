// Drives a lily server (LILY_URL) with the official openai and @anthropic-ai/sdk packages. The Go
// test TestNodeSDKs starts the server over a fake model that answers "Thinking.</think>Hello from
// lily." to most prompts, calls get_weather when the prompt says "weather", and samples freely
// (held to the grammar) when it says "schema". Exits non-zero on the first failed check.
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const base = process.env.LILY_URL;
const openai = new OpenAI({ baseURL: base + "/v1", apiKey: "sk-test", maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base, apiKey: "sk-test", maxRetries: 0 });
const model = "qwen-test";

function check(name, ok, got) {
  if (!ok) {
    console.error(`FAIL ${name}: ${JSON.stringify(got)}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}

const weatherTool = {
  type: "function",
  function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
};
const schema = {
  type: "object",
  properties: { n: { type: "integer" }, word: { type: "string", maxLength: 6 } },
  required: ["n", "word"],
  additionalProperties: false,
};

// OpenAI chat, streamed and not.
const chat = await openai.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
check("chat", chat.choices[0].message.content === "Hello from lily." && chat.choices[0].message.reasoning_content === "Thinking.", chat);
let streamed = "";
for await (const chunk of await openai.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], stream: true })) {
  streamed += chunk.choices[0]?.delta?.content ?? "";
}
check("chat stream", streamed === "Hello from lily.", streamed);

// Tools.
const call = await openai.chat.completions.create({ model, messages: [{ role: "user", content: "weather?" }], tools: [weatherTool] });
const tc = call.choices[0].message.tool_calls?.[0];
check("chat tools", tc?.function.name === "get_weather" && JSON.parse(tc.function.arguments).city === "Paris", call);

// Legacy completions.
const cmpl = await openai.completions.create({ model, prompt: "Say", max_tokens: 4 });
check("completions", cmpl.choices[0].finish_reason === "length" && cmpl.usage.completion_tokens === 4, cmpl);

// Structured output through the SDK's parse helper.
const parsed = await openai.chat.completions.parse({
  model, messages: [{ role: "user", content: "schema" }], temperature: 1, max_tokens: 60,
  response_format: { type: "json_schema", json_schema: { name: "thing", schema, strict: true } },
});
const p = parsed.choices[0].message.parsed;
// maxLength counts characters (code points, JSON Schema); a JS string's length counts UTF-16 units.
check("chat parse", Number.isInteger(p?.n) && typeof p.word === "string" && [...p.word].length <= 6, parsed.choices[0].message);

// Responses, streamed and not, and its parse helper.
const resp = await openai.responses.create({ model, input: "hi", instructions: "Be brief." });
check("responses", resp.output_text === "Hello from lily." && resp.status === "completed", resp);
const rs = openai.responses.stream({ model, input: "hi" });
let rtext = "";
rs.on("response.output_text.delta", (e) => { rtext += e.delta; });
const final = await rs.finalResponse();
check("responses stream", rtext === "Hello from lily." && final.output.at(-1).content[0].text === "Hello from lily.", { rtext, final });
const next = await openai.responses.create({ model, input: "and?", previous_response_id: resp.id });
check("responses previous_response_id", next.usage.input_tokens > resp.usage.input_tokens, next.usage);
const rparsed = await openai.responses.parse({
  model, input: "schema", temperature: 1, max_output_tokens: 60,
  text: { format: { type: "json_schema", name: "thing", schema, strict: true } },
});
check("responses parse", Number.isInteger(rparsed.output_parsed?.n), rparsed.output_text);

// Anthropic Messages: text, thinking, stream, tools, count_tokens.
const msg = await anthropic.messages.create({
  model, max_tokens: 64, thinking: { type: "enabled", budget_tokens: 1024 }, messages: [{ role: "user", content: "hi" }],
});
check("messages", msg.content.at(-1).text === "Hello from lily." && msg.content[0].type === "thinking" && msg.stop_reason === "end_turn", msg);
const ms = anthropic.messages.stream({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
let mtext = "";
ms.on("text", (t) => { mtext += t; });
const mfinal = await ms.finalMessage();
check("messages stream", mtext === "Hello from lily." && mfinal.content[0].text === "Hello from lily.", mfinal);
const use = await anthropic.messages.create({
  model, max_tokens: 80, messages: [{ role: "user", content: "weather?" }],
  tools: [{ name: "get_weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }],
});
const block = use.content.find((b) => b.type === "tool_use");
check("messages tools", use.stop_reason === "tool_use" && block?.name === "get_weather" && block.input.city === "Paris", use);
const count = await anthropic.messages.countTokens({ model, messages: [{ role: "user", content: "hi" }] });
check("count_tokens", count.input_tokens > 0, count);
try {
  await anthropic.messages.create({ model, max_tokens: 5, messages: [{ role: "robot", content: "x" }] });
  check("messages error", false, "no error");
} catch (e) {
  check("messages error", e.status === 400 && /robot/.test(e.message), e.message);
}
