import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/**
 * One request whose target and headers go on the wire exactly as given: `fetch` drops a Host
 * header and normalises the target, so forged-Host and absolute-form cases need node:http.
 * A 200 event stream is not read to its end: the response is destroyed once its head arrived.
 */
export function rawRequest(
  origin: string,
  target: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const request = httpRequest({
      hostname,
      port,
      path: target,
      method: options.method ?? 'GET',
      headers: options.headers ?? {},
    });
    request.on('error', reject);
    request.on('response', (response) => {
      if (String(response.headers['content-type']).startsWith('text/event-stream')) {
        response.destroy();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: '' });
        return;
      }
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
      );
    });
    request.end(options.body);
  });
}
