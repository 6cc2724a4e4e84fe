// The Playground's JSON API, as the page calls it. Every failure is an ApiError carrying the
// server's {type, message, line, column, start, end, ...} object.

export class ApiError extends Error {
  constructor(detail) {
    super(detail.message);
    this.detail = detail;
  }
}

export async function api(path, body, { signal } = {}) {
  const init = body === undefined
    ? { method: "GET", signal }
    : { method: "POST", signal, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError({ type: "network", message: "the Playground server does not answer: is it still running?" });
  }
  let payload;
  try {
    payload = await response.json();
  } catch {
    throw new ApiError({ type: "http", message: `the server answered ${response.status} without JSON` });
  }
  if (!response.ok || payload.error) {
    throw new ApiError(payload.error || { type: "http", message: `the server answered ${response.status}` });
  }
  return payload;
}
