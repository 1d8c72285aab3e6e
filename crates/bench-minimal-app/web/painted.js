// After the first frame with the paragraph is painted (the second animation frame after load),
// the shell is told, the way the real app's UI reports "ready" once its first screen is drawn.
addEventListener("load", () => requestAnimationFrame(() => requestAnimationFrame(() => window.__TAURI_INTERNALS__.invoke("painted"))));
