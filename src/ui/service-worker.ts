/// <reference types="vite/client" />
/**
 * Registers the site's service worker (public/sw.js): the site and its shipped models kept for
 * offline use after the first visit, and cross-origin isolation on a static host that cannot set
 * COOP/COEP headers (the worker adds them to what it serves).
 *
 * For: the built page (src/ui/main.ts calls it). Not in `vite` dev (hot reload stays as it is), and
 * nothing at all without service workers (an insecure http:// address, a private window that
 * refuses them): the page then runs as before. A failed registration logs one warning.
 *
 * The one reload: a page loaded before the worker controlled it is not isolated; when the worker
 * takes control (the first visit, once the site is stored) the page reloads once to become so.
 * A sessionStorage flag stops a second reload in the same tab if isolation still does not come
 * (e.g. a browser that ignores the headers), so a page can never loop.
 *
 * Never under the user's work: the worker takes control once it has stored the site, which on a
 * first visit can come after the user pressed Start. When `canReload()` says no (a job runs, or the
 * run has iterations the user is looking at), the page does not reload by itself: `onWaiting` tells
 * the page, which offers the reload as a button (`reloadNow`; the run resumes from its checkpoint).
 *
 * Example: const sw = registerServiceWorker({ canReload: () => !touched && !run.busy,
 *                                             onWaiting: (why) => (isolationWaits = why) });
 *          <button onclick={sw.reloadNow}>Reload</button>
 */

const RELOADED = 'mappa-sw-reloaded';

export interface IsolationOptions {
  /** Whether reloading now loses nothing the user sees (default: always). */
  canReload?: () => boolean;
  /** Called instead of reloading when canReload() says no; `why` names the event. */
  onWaiting?: (why: string) => void;
}

export function registerServiceWorker(opts: IsolationOptions = {}): { reloadNow: () => void } {
  const handle = { reloadNow: () => reloadForIsolation('the user asked', true) };
  if (import.meta.env.DEV) return handle;
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator) || !window.isSecureContext) return handle;
  const sw = navigator.serviceWorker;

  function reloadForIsolation(why: string, asked = false) {
    if (window.crossOriginIsolated) return;
    if (!asked && opts.canReload && !opts.canReload()) {
      opts.onWaiting?.(why); // the user's run is on screen: offer the reload, do not force it
      return;
    }
    let done = false;
    try {
      done = sessionStorage.getItem(RELOADED) !== null;
      if (!done) sessionStorage.setItem(RELOADED, why);
    } catch {
      done = true; // no sessionStorage (blocked): no guard, so no reload
    }
    if (done && !asked) return; // the user's own request is not a loop
    console.info(`mappa: reloading once for cross-origin isolation (${why})`);
    location.reload();
  }

  if (window.crossOriginIsolated) {
    try {
      sessionStorage.removeItem(RELOADED); // isolated (by the host or the worker): a later need may reload again
    } catch {
      /* no sessionStorage: nothing to clear */
    }
  }
  sw.addEventListener('controllerchange', () => reloadForIsolation('the service worker took control'));
  sw.register(`${import.meta.env.BASE_URL}sw.js`)
    .then((reg) => {
      // Active but not controlling: the page was force-reloaded (Shift+Reload bypasses the worker).
      if (reg.active && !sw.controller) reloadForIsolation('the page bypassed the service worker');
    })
    .catch((e: unknown) => console.warn(`mappa: the service worker did not register, so the site is not kept for offline use: ${(e as Error)?.message ?? e}`));
  return handle;
}
