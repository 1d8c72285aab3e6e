import { setWindowTheme, type Theme } from "./ipc";

// Whether this window pinned a theme on GTK: "follow the system" then hands it back. Until a
// theme is pinned, the system's own choice is never touched.
let pinned = false;

/** Shows a theme at once: the page's colours and the window's (dropdown menus, scrollbars).
 * Settings calls it as the person picks one, before Save; the app, for the saved one. */
export function showTheme(theme: Theme) {
  document.documentElement.dataset.theme = theme;
  if (theme === "system" && !pinned) return;
  pinned = theme !== "system";
  setWindowTheme(theme === "system" ? null : theme).catch(() => undefined);
}
