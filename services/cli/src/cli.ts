import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { REVOKE_USAGE, RevokeOptionsError, revoke } from './revoke.js';
import { mintToken, TokenOptionsError } from './token.js';

export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** The CLI's version: its package.json (the same file from src/ and from dist/). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

export const USAGE = `Usage: herald <command> [options]

Commands:
  hub                 start one hub node (configured by MERCURE_* and the common variables)
  broker              start one broker node (configured by JWT_* and the common variables)
  token               mint a development token (printed alone on the last line)
  token revoke        put a token on a hub's and/or a broker's deny list
  help [command]      this text, or a command's (same as herald <command> --help)

Options (every command):
  -h, --help          print the command's help and exit; nothing is started
  -v, --version       print the version and exit

Docs: docs/hub.md, docs/broker.md, docs/auth.md in the repository.
`;

export const TOKEN_USAGE = `Usage: herald token (--secret <s> | --key <file>) [options]

Mints a development token for the hub (mercure claim) and/or the broker (roles claim). The token
is printed alone on stdout's last line; its claims are described on stderr. Details: docs/auth.md.

Options:
  --secret <s>        HMAC secret (HS256 unless --alg says otherwise)
  --key <file>        private key PEM file (RS*, ES*, EdDSA; --alg defaults to RS256)
  --alg <alg>         signing algorithm
  --publish <match>   hub: a mercure.publish entry (repeatable)
  --subscribe <match> hub: a mercure.subscribe entry (repeatable)
  --match-type <t>    hub: matchType of every entry (Exact, URLPattern, Regexp, URITemplate)
  --payload <json>    hub: mercure.payload
  --role <role>       broker: a role (repeatable), in the "roles" claim
  --sub <id>          the sub claim (the broker stores it as producerSub)
  --jti <id>          the jti claim (what herald token revoke --jti names)
  --hub-admin         hub: "herald": {"admin": true}, for the hub's admin routes (sign with
                      the hub's publisher key)
  --exp <seconds>     lifetime; without it the token has no exp
  -h, --help          print this help
  -v, --version       print the version

Example:
  herald token --secret change-me --publish '*' --subscribe '*'

Revoking tokens: herald token revoke --help
`;

interface SettingLike {
  readonly form: string;
  readonly defaultText?: string;
  readonly required: boolean;
}

/** A service's help: what it is, then every variable of its spec with its form and default. */
function serviceUsage(command: 'hub' | 'broker', spec: Readonly<Record<string, SettingLike>>): string {
  const intro =
    command === 'hub'
      ? `Usage: herald hub

Starts one Mercure hub node on PORT (default 8080), configured only by environment variables.
Required: MERCURE_PUBLISHER_JWT_KEY (or MERCURE_PUBLISHER_JWKS_URL). Without REDIS_URL,
REDIS_SENTINELS or REDIS_CLUSTER_NODES the hub runs on its in-process backend (one node).
Quick start: docs/hub.md.`
      : `Usage: herald broker

Starts one Queen-compatible broker node on PORT (default 6632), configured only by environment
variables. Without REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES the broker runs on its
in-process backend (one node, nothing survives a restart). Auth is off unless JWT_ENABLED=true.
Reference: docs/broker.md.`;
  const rows = Object.entries(spec).map(([name, setting]) => {
    const detail = setting.required
      ? 'required'
      : setting.defaultText !== undefined
        ? `default ${setting.defaultText === '' ? '""' : setting.defaultText}`
        : 'unset by default';
    return `  ${name.padEnd(36)} ${detail}; ${setting.form}`;
  });
  return `${intro}\n\nEnvironment variables:\n${rows.join('\n')}\n\nOptions:\n  -h, --help    print this help\n  -v, --version print the version\n`;
}

const HELP = new Set(['--help', '-h', 'help']);
const VERSION_FLAGS = new Set(['--version', '-v', '-V']);

/**
 * @param environment where `herald token revoke` reads HERALD_ADMIN_TOKEN (main.ts passes the
 *                    process's; tests their own)
 */
export async function runCli(
  argv: readonly string[],
  output: Output,
  environment: Readonly<Record<string, string | undefined>> = {},
): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    output.stderr(USAGE);
    return 1;
  }
  if (VERSION_FLAGS.has(command)) {
    output.stdout(`herald ${VERSION}\n`);
    return 0;
  }
  if (HELP.has(command)) {
    const topic = command === 'help' ? rest[0] : undefined;
    if (topic === undefined) {
      output.stdout(USAGE);
      return 0;
    }
    return runCli([...rest, '--help'], output);
  }
  if (command !== 'token' && command !== 'hub' && command !== 'broker') {
    output.stderr(`herald: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
    return 1;
  }
  // --help / --version anywhere among a command's arguments wins, and starts nothing.
  if (rest.some((argument) => argument === '--help' || argument === '-h')) {
    output.stdout(command === 'token' && rest[0] === 'revoke' ? REVOKE_USAGE : await commandUsage(command));
    return 0;
  }
  if (rest.some((argument) => VERSION_FLAGS.has(argument))) {
    output.stdout(`herald ${VERSION}\n`);
    return 0;
  }
  switch (command) {
    case 'token':
      return rest[0] === 'revoke' ? revokeCommand(rest.slice(1), output, environment) : token(rest, output);
    case 'hub':
    case 'broker':
      if (rest.length > 0) {
        output.stderr(
          `herald ${command}: takes no arguments (got ${JSON.stringify(rest[0])}); it is configured by environment variables, see herald ${command} --help\n`,
        );
        return 1;
      }
      await import(command === 'hub' ? '@herald/hub/main' : '@herald/broker/main');
      return 0;
  }
}

async function commandUsage(command: 'token' | 'hub' | 'broker'): Promise<string> {
  if (command === 'token') return TOKEN_USAGE;
  // The spec only: importing the package's index starts nothing (main.js does).
  const spec =
    command === 'hub' ? (await import('@herald/hub')).hubSpec : (await import('@herald/broker')).brokerSpec;
  return serviceUsage(command, spec);
}

async function token(argv: readonly string[], output: Output): Promise<number> {
  let values: ReturnType<typeof parseTokenArgs>['values'];
  try {
    values = parseTokenArgs(argv).values;
  } catch (error) {
    output.stderr(
      `herald token: ${error instanceof Error ? error.message : String(error)} (see herald token --help)\n`,
    );
    return 1;
  }
  try {
    const { token, claims, algorithm } = await mintToken(values);
    output.stderr(`# ${algorithm} token with claims ${JSON.stringify(claims)}\n`);
    output.stdout(`${token}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof TokenOptionsError)) throw error;
    output.stderr(`herald token: ${error.message} (see herald token --help)\n`);
    return 1;
  }
}

async function revokeCommand(
  argv: readonly string[],
  output: Output,
  environment: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  try {
    const { values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        hub: { type: 'string', multiple: true },
        broker: { type: 'string', multiple: true },
        'admin-token': { type: 'string' },
        jti: { type: 'string' },
        sub: { type: 'string' },
        before: { type: 'string' },
        token: { type: 'string' },
        expires: { type: 'string' },
      },
    });
    return await revoke(values, environment, output);
  } catch (error) {
    if (!(error instanceof RevokeOptionsError) && !isParseArgsError(error)) throw error;
    output.stderr(`herald token revoke: ${(error as Error).message} (see herald token revoke --help)\n`);
    return 1;
  }
}

/** node:util parseArgs refusals (an unknown option, a missing value) carry an ERR_PARSE_ARGS_* code. */
function isParseArgsError(error: unknown): error is Error {
  return error instanceof Error && String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS');
}

function parseTokenArgs(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      secret: { type: 'string' },
      key: { type: 'string' },
      alg: { type: 'string' },
      publish: { type: 'string', multiple: true },
      subscribe: { type: 'string', multiple: true },
      'match-type': { type: 'string' },
      payload: { type: 'string' },
      role: { type: 'string', multiple: true },
      sub: { type: 'string' },
      jti: { type: 'string' },
      'hub-admin': { type: 'boolean' },
      exp: { type: 'string' },
    },
  });
}
