import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { clearMocks } from "@tauri-apps/api/mocks";
import { afterEach } from "vitest";

afterEach(() => {
  cleanup();
  clearMocks();
  // Drafts and model grades are kept in the window's storage: each test starts without them.
  sessionStorage.clear();
  localStorage.clear();
});
