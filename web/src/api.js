// The agent's HTTP API as the page uses it. Every URL is relative to the page, so the dashboard works
// below --web.route-prefix and behind a proxy's path. Errors come back as thrown ApiError values with
// a short reason the banner can show; nothing here logs to the console.

// A request that has not answered in this long counts as the agent being unreachable (a hung agent
// must turn the banner on, not freeze the page).
const kRequestTimeoutMs = 8000;

export class ApiError extends Error {
  constructor(message, { unreachable = false, status = 0 } = {}) {
    super(message);
    this.unreachable = unreachable;
    this.status = status;
  }
}

async function getJson(path, params) {
  const url = params ? `${path}?${new URLSearchParams(params)}` : path;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), kRequestTimeoutMs);
  let response;
  try {
    response = await fetch(url, { signal: abort.signal, headers: { Accept: 'application/json' } });
  } catch (e) {
    throw new ApiError(abort.signal.aborted ? `${path}: no answer in ${kRequestTimeoutMs / 1000} s` : `${path}: ${e.message}`,
                       { unreachable: true });
  } finally {
    clearTimeout(timer);
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    // An answer that is not JSON (a proxy's error page) is judged by its status below.
  }
  if (!response.ok || (body && body.status === 'error')) {
    const why = body && body.error ? body.error : `HTTP ${response.status}`;
    // 502/503/504 from a proxy in front of a stopped agent mean the same as a refused connection.
    const unreachable = [502, 503, 504].includes(response.status) && !(body && body.errorType);
    throw new ApiError(`${path}: ${why}`, { unreachable, status: response.status });
  }
  if (body === null) throw new ApiError(`${path}: the answer is not JSON`, { status: response.status });
  return body;
}

// GET api/v1/gpus: inventory, each GPU's latest values and processes, and when that reading was taken.
export const fetchGpus = () => getJson('api/v1/gpus');
export const fetchDiagnosis = () => getJson('api/v1/diagnosis').then((b) => b.data);
export const fetchAlerts = () => getJson('api/v1/alerts').then((b) => b.data.alerts || []);
export const fetchBuildInfo = () => getJson('api/v1/status/buildinfo').then((b) => b.data);

// An instant query; the result vector.
export const query = (promql) => getJson('api/v1/query', { query: promql }).then((b) => b.data.result);

// A range query; the result matrix (times in seconds, values as Prometheus's strings).
export const queryRange = (promql, start, end, step) =>
  getJson('api/v1/query_range', { query: promql, start: String(start), end: String(end), step: String(step) })
    .then((b) => b.data.result);
