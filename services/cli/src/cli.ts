import { parseArgs } from 'node:util';
import { mintToken, TokenOptionsError } from './token.js';

export interface Output {
  stdout(text: string): void;
  stderr(text: string): void;
}

export const USAGE = `Usage: herald <command> [options]

Commands:
  hub                 start one hub node (configured by MERCURE_* and the common variables)
  broker              start one broker node (configured by JWT_* and the common variables)
  token               mint a development token (printed alone on the last line)

herald token options:
  --secret <s>        HMAC secret (HS256 unless --alg says otherwise)
  --key <file>        private key PEM file (RS*, ES*, EdDSA; --alg defaults to RS256)
  --alg <alg>         signing algorithm
  --publish <match>   hub: a mercure.publish entry (repeatable)
  --subscribe <match> hub: a mercure.subscribe entry (repeatable)
  --match-type <t>    hub: matchType of every entry (Exact, URLPattern, Regexp, URITemplate)
  --payload <json>    hub: mercure.payload
  --role <role>       broker: a role (repeatable), in the "roles" claim
  --sub <id>          the sub claim (the broker stores it as producerSub)
  --exp <seconds>     lifetime; without it the token has no exp
`;

export async function runCli(argv: readonly string[], output: Output): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'token':
      return token(rest, output);
    case 'hub':
      await import('@herald/hub/main');
      return 0;
    case 'broker':
      await import('@herald/broker/main');
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      output.stdout(USAGE);
      return command === undefined ? 1 : 0;
    default:
      output.stderr(`herald: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 1;
  }
}

async function token(argv: readonly string[], output: Output): Promise<number> {
  let values: ReturnType<typeof parseTokenArgs>['values'];
  try {
    values = parseTokenArgs(argv).values;
  } catch (error) {
    output.stderr(`herald token: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  try {
    const { token, claims, algorithm } = await mintToken(values);
    output.stderr(`# ${algorithm} token with claims ${JSON.stringify(claims)}\n`);
    output.stdout(`${token}\n`);
    return 0;
  } catch (error) {
    if (!(error instanceof TokenOptionsError)) throw error;
    output.stderr(`herald token: ${error.message}\n`);
    return 1;
  }
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
      exp: { type: 'string' },
    },
  });
}
