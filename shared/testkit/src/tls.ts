import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Files of a throwaway certificate authority and one server certificate it signed. */
export interface TestCertificates {
  readonly directory: string;
  /** The CA certificate (PEM): what a client trusts, e.g. through NODE_EXTRA_CA_CERTS. */
  readonly caFile: string;
  /** The server's certificate (PEM), valid for `localhost` and 127.0.0.1, and its key. */
  readonly certFile: string;
  readonly keyFile: string;
}

/**
 * A CA and a server certificate for `localhost`/127.0.0.1, made with the `openssl` command line
 * (P-256 keys, valid two days), for tests of TLS connections to a private redis-server.
 */
export function createTestCertificates(): TestCertificates {
  const directory = mkdtempSync(join(tmpdir(), 'herald-tls-'));
  const file = (name: string) => join(directory, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ecKey,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Herald test CA',
  );
  openssl(
    'req',
    ...ecKey,
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
    '-subj',
    '/CN=localhost',
  );
  writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('server.pem'),
    '-days',
    '2',
    '-extfile',
    file('server.ext'),
  );
  return { directory, caFile: file('ca.pem'), certFile: file('server.pem'), keyFile: file('server.key') };
}
