#!/usr/bin/env node
// `npm start`: the system on its embedded default — one hub and one broker, in-process backends
// (no Redis), hub in development mode with a development secret. Not for production.
//
// - The banner is printed once both services listen (each tells this process over its IPC
//   channel, shared/http/src/process.ts); if either fails to start, the other is stopped, no
//   banner, exit 1.
// - SIGINT, SIGTERM or SIGHUP stop both and this process exits once they have exited. If this
//   process is killed outright, each service sees its IPC channel close and shuts down; if the
//   shell that started it dies (`npm start` runs `sh -c`), it notices its parent changed and stops.
// - Logs: the services write JSON lines, made readable when stdout is a terminal
//   (shared/http/src/log-destination.ts).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const hubPort = process.env.HUB_PORT ?? '8080';
const brokerPort = process.env.BROKER_PORT ?? '6632';
const devSecret = process.env.HERALD_DEV_SECRET ?? 'herald-development-secret-change-me';

// REDIS_* (the embedded default has no Redis) and this script's own variables stay out of the
// services' environment: BROKER_PORT would be an unknown BROKER_* setting to the broker.
const environment = Object.fromEntries(
  Object.entries(process.env).filter(
    ([name]) =>
      !name.startsWith('REDIS_') && !['HUB_PORT', 'BROKER_PORT', 'HERALD_DEV_SECRET'].includes(name),
  ),
);
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
      // The console (served by the broker) reads the hub's subscriptions and tails it over SSE.
      MERCURE_CORS_ORIGINS: `http://127.0.0.1:${brokerPort},http://localhost:${brokerPort}`,
    },
  },
  {
    name: 'broker',
    script: 'services/broker/dist/main.js',
    env: { ...environment, PORT: brokerPort, HOST: '127.0.0.1' },
  },
];

let stopping = false;
const listening = new Map();
const running = new Set();

const children = nodes.map(({ name, script, env }) => {
  // stdout and stderr are this process's own (a terminal stays a terminal: pretty logs); the
  // fourth descriptor is the IPC channel.
  const child = spawn(process.execPath, [script], {
    cwd: root,
    env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  running.add(child);
  child.on('message', (message) => {
    if (message?.type !== 'herald:listening' || message.service !== name) return;
    listening.set(name, message.port);
    if (listening.size === nodes.length && !stopping) printBanner();
  });
  child.on('exit', (code, signal) => {
    running.delete(child);
    if (!stopping) {
      console.error(`herald: ${name} exited (${signal ?? `code ${code}`}); stopping the others`);
      process.exitCode = 1;
      shutdown();
    }
    if (running.size === 0) {
      clearInterval(parentWatch);
      process.exit();
    }
  });
  return child;
});

function shutdown() {
  if (stopping) return;
  stopping = true;
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, shutdown);

// `npm start` runs `sh -c "… && exec node scripts/start.mjs"`; should a shell stay between npm
// and this process and die of a forwarded SIGTERM, this process is re-parented: stop then.
const parent = process.ppid;
const parentWatch = setInterval(() => {
  if (process.ppid !== parent) shutdown();
}, 500);

function printBanner() {
  const hubUrl = `http://127.0.0.1:${listening.get('hub')}`;
  const hub = `${hubUrl}/.well-known/mercure`;
  const broker = `http://127.0.0.1:${listening.get('broker')}`;
  console.log(`
Herald is running on its embedded default (in-process backends, development mode):
  hub      ${hub}   (home: ${hubUrl}/, dev UI: ${hub}/ui/)
  broker   ${broker}/api/v1
  console  ${broker}/console/

Try it (in another terminal, from this folder):
  TOKEN=$(npx herald token --secret ${devSecret} --publish '*' --subscribe '*')
  curl -N "${hub}?match=https://example.com/books/1" &
  curl -d topic=https://example.com/books/1 -d 'data={"title":"Dune"}' -H "Authorization: Bearer $TOKEN" ${hub}
  curl -X POST -H 'content-type: application/json' -d '{"items":[{"queue":"demo","payload":{"hello":"world"}}]}' ${broker}/api/v1/push
  curl "${broker}/api/v1/pop/queue/demo?autoAck=true"

Ctrl-C stops both.
`);
}
