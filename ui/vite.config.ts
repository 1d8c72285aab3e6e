/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  resolve: {
    alias: [
      // The app runs with Object.prototype frozen (tauri.conf.json, freezePrototype). The package's
      // single-file build inlines diff-match-patch, whose module code assigns `prototype.toString`
      // (an error under a frozen prototype); its per-module build lets the bundler leave that
      // code out, as the review uses no word-level diff.
      { find: /^react-diff-view$/, replacement: "react-diff-view/esm/index.js" },
      // Likewise lodash's single-file build sets up its chaining wrapper (`prototype.valueOf`)
      // as it loads; its ES modules bring only the functions used.
      { find: /^lodash$/, replacement: "lodash-es" },
    ],
  },
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: { outDir: "dist", emptyOutDir: true, target: "es2022" },
  test: {
    environment: "jsdom",
    setupFiles: ["./src/test/setup.ts"],
    restoreMocks: true,
  },
});
