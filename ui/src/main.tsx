import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { followLastInput } from "./lastInput";
import { report } from "./perf";
import "./styles.css";

// Where the first 200 ms of a start go (docs/benchmarks.md, section 6): the script has been
// fetched and parsed by now; "shell" is the first render, "ready" the first screen with settings.
report("script", performance.now());

followLastInput();

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
