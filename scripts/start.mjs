#!/usr/bin/env node
// `npm start`: the system on its embedded default — one hub and one broker, in-process backends
// (no Redis), hub in development mode with a development secret. Not for production.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const hubPort = process.env.HUB_PORT ?? '8080';
const brokerPort = process.env.BROKER_PORT ?? '6632';
const devSecret = process.env.HERALD_DEV_SECRET ?? 'herald-development-secret-change-me';

const { REDIS_URL: _ignored, ...environment } = process.env;
const nodes = [
  {
    name: 'hub',
    script: 'services/hub/dist/main.js',
    env: {
      ...environment,
      PORT: hubPort,
      HOST: '127.0.0.1',
      MERCURE_DEV: '1',
      MERCURE_PUBLISHER_JWT_KEY: devSecret,
      MERCURE_SUBSCRIBER_JWT_KEY: devSecret,
      MERCURE_SUBSCRIPTIONS: '1',
    },
  },
  {
    name: 'broker',
    script: 'services/broker/dist/main.js',
    env: { ...environment, PORT: brokerPort, HOST: '127.0.0.1' },
  },
];

const children = nodes.map(({ name, script, env }) => {
  const child = spawn(process.execPath, [script], { cwd: root, env, stdio: 'inherit' });
  child.on('exit', (code, signal) => {
    console.error(`${name} exited (${signal ?? code}); stopping the others`);
    shutdown();
    process.exitCode = code ?? 1;
  });
  return child;
});

let stopping = false;
function shutdown() {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);

const hub = `http://127.0.0.1:${hubPort}/.well-known/mercure`;
console.log(`
Herald is starting on its embedded default (in-process backends, development mode):
  hub     ${hub}   (dev UI: ${hub}/ui/)
  broker  http://127.0.0.1:${brokerPort}/api/v1

Try it (in another terminal, from this folder):
  TOKEN=$(npx herald token --secret ${devSecret} --publish '*' --subscribe '*')
  curl -N "${hub}?match=https://example.com/books/1" &
  curl -d topic=https://example.com/books/1 -d 'data={"title":"Dune"}' -H "Authorization: Bearer $TOKEN" ${hub}
  curl -X POST -H 'content-type: application/json' -d '{"items":[{"queue":"demo","payload":{"hello":"world"}}]}' http://127.0.0.1:${brokerPort}/api/v1/push
  curl "http://127.0.0.1:${brokerPort}/api/v1/pop/queue/demo?autoAck=true"

Ctrl-C stops both.
`);
