import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

/** Polls `load` every `intervalMs` while the view is shown (live refresh without reloading). */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: readonly unknown[] = []) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loadedAt, setLoadedAt] = useState<number | undefined>(undefined);
  const loadRef = useRef(load);
  loadRef.current = load;
  const reload = useCallback(async () => {
    try {
      setData(await loadRef.current());
      setError(undefined);
      setLoadedAt(Date.now());
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  }, []);
  // The caller's deps restart the poll (a view's parameters changed).
  useEffect(() => {
    setData(undefined);
    void reload();
    const timer = setInterval(() => void reload(), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs, reload, ...deps]);
  return { data, error, loadedAt, reload };
}

/** The hash route: `#/queues/orders?x=1` → path `['queues', 'orders']`, query `x=1`. */
export interface Route {
  readonly path: readonly string[];
  readonly query: URLSearchParams;
}

function currentRoute(): Route {
  const hash = location.hash.replace(/^#\/?/, '');
  const [path = '', query = ''] = hash.split('?');
  return {
    path: path
      .split('/')
      .filter((part) => part !== '')
      .map((part) => decodeURIComponent(part)),
    query: new URLSearchParams(query),
  };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const onChange = () => setRoute(currentRoute());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** A shareable link to a view: `href('queues', name)` → `#/queues/<name>`. */
export function href(...parts: string[]): string {
  return `#/${parts.map((part) => encodeURIComponent(part)).join('/')}`;
}

export function withQuery(link: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value) params.set(key, value);
  const text = params.toString();
  return text ? `${link}?${text}` : link;
}
