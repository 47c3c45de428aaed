import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';

/**
 * Polls `load` every `intervalMs` while the view is shown (live refresh without reloading). The
 * caller's deps name what is loaded (a view's parameters): when they change, the data of the
 * previous ones is no longer returned, not even for the render that changed them, and an answer
 * for them that arrives late is dropped (a queue's page must never show another queue's options).
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: readonly unknown[] = []) {
  const generations = useRef(0);
  // Counted during the render that changes the deps, so that render already drops the old data.
  const generation = useMemo(() => ++generations.current, deps);
  const [loaded, setLoaded] = useState<{ generation: number; data: T } | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loadedAt, setLoadedAt] = useState<number | undefined>(undefined);
  const loadRef = useRef(load);
  loadRef.current = load;
  // Requests numbered as asked: an answer older than the one shown is dropped (a poll asked
  // before a save and answered after the reload that followed it would undo the save on screen).
  const asks = useRef(0);
  const shown = useRef(0);
  const reload = useCallback(async () => {
    const asked = generations.current;
    const ask = ++asks.current;
    try {
      const data = await loadRef.current();
      if (asked !== generations.current || ask < shown.current) return;
      shown.current = ask;
      setLoaded({ generation: asked, data });
      setError(undefined);
      setLoadedAt(Date.now());
    } catch (caught) {
      if (asked !== generations.current || ask < shown.current) return;
      setError(caught instanceof Error ? caught.message : String(caught));
    }
  }, []);
  // The caller's deps restart the poll (a view's parameters changed).
  useEffect(() => {
    void reload();
    const timer = setInterval(() => void reload(), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs, reload, generation]);
  const data = loaded?.generation === generation ? loaded.data : undefined;
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
