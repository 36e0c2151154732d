// The page's only link to the server: lily's public HTTP API on the page's own origin.
// The API key (lily serve --api-key) lives in sessionStorage: this tab only, asked for once.

const KEY = "lily.apiKey";

export class HTTPError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function apiKey() {
  return sessionStorage.getItem(KEY) || "";
}

export function setAPIKey(k) {
  if (k) sessionStorage.setItem(KEY, k);
  else sessionStorage.removeItem(KEY);
}

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  const k = apiKey();
  if (k) h["Authorization"] = "Bearer " + k;
  return h;
}

// failure turns a non-2xx response into an HTTPError carrying the OpenAI envelope's message.
async function failure(res) {
  let msg = res.status + " " + res.statusText;
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) msg = body.error.message;
  } catch (_) { /* not JSON: keep the status line */ }
  return new HTTPError(res.status, msg);
}

// info returns {model, backend, device, context_size, max_context}; servers without
// /v1/lily/info get what /v1/models says.
export async function info() {
  let res = await fetch("/v1/lily/info", { headers: headers(false) });
  if (res.status === 404) {
    res = await fetch("/v1/models", { headers: headers(false) });
    if (!res.ok) throw await failure(res);
    const m = (await res.json()).data[0] || {};
    return { model: m.id, backend: "", device: "", context_size: m.max_model_len };
  }
  if (!res.ok) throw await failure(res);
  return res.json();
}

// streamChat posts a streaming chat completion and calls onEvent with each parsed SSE payload
// until [DONE]. It rejects with an AbortError when signal aborts (Stop), which closes the
// connection: the server stops generating within one step.
export async function streamChat(body, signal, onEvent) {
  const res = await fetch("/v1/chat/completions", {
    method: "POST", headers: headers(true), body: JSON.stringify(body), signal,
  });
  if (!res.ok) throw await failure(res);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of event.split("\n")) {
          if (!line.startsWith("data:")) continue; // comments (keep-alives) and other fields
          const data = line.slice(5).trim();
          if (data === "[DONE]") return;
          onEvent(JSON.parse(data));
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {}); // an error event or a bad chunk ends the stream here too
  }
}
