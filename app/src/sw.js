// The app's service worker (`/app/sw.js`, scope `/app/`): it makes the phone's page an installable app
// and shows the page's notices where a page may not construct them (Chrome on Android). It has no fetch
// handler, so it caches nothing: every request, API answers above all, goes to the network as if it
// were not there. A click on a notice brings the app forward and asks it to open the session.
/// <reference lib="webworker" />
// deno-lint-ignore-file no-undef

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const open = event.notification.data;
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    const page = windows[0];
    if (page) {
      await page.focus();
      if (open && open.dock === "open") page.postMessage(open);
      return;
    }
    await self.clients.openWindow(self.registration.scope);
  })());
});
