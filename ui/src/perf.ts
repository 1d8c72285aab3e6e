// The app's own timing, for the footprint benchmark (crates/bench). Off unless the app was
// started with FINISHLINE_PERF=1; then it reports through the shell, which prints each number
// on stderr for the benchmark to read. Nothing is collected or sent anywhere else.
import { bootPerf } from "./boot";
import { ipc } from "./ipc";

let enabled: Promise<boolean> | null = null;

export function perfEnabled(): Promise<boolean> {
  const known = bootPerf();
  enabled ??= known !== undefined ? Promise.resolve(known) : ipc.perfEnabled().catch(() => false);
  return enabled;
}

export function report(name: string, value: number) {
  void perfEnabled().then((on) => {
    if (on) ipc.perfReport(name, value).catch(() => {});
  });
}

/** Counts frames and long frames (over 50 ms, three missed 60 Hz frames) until stopped. */
export function watchFrames(): () => void {
  let last = performance.now();
  let frames = 0;
  let long = 0;
  let worst = 0;
  let id = 0;
  let stopped = false;
  let started = 0;
  void perfEnabled().then((on) => {
    if (!on || stopped) return;
    last = performance.now();
    started = last;
    id = requestAnimationFrame(function tick(now) {
      const gap = now - last;
      last = now;
      frames += 1;
      if (gap > 50) {
        long += 1;
        // When it happened and how long it was, for finding the cause.
        report("stream_long_frame_at_ms", Math.round(now - started) * 1000 + Math.min(999, Math.round(gap)));
      }
      worst = Math.max(worst, gap);
      id = requestAnimationFrame(tick);
    });
  });
  return () => {
    stopped = true;
    if (!id) return;
    cancelAnimationFrame(id);
    report("stream_frames", frames);
    report("stream_long_frames", long);
    report("stream_worst_frame_ms", worst);
  };
}
