import { useEffect, useRef, useState } from "react";

interface Section {
  title: string;
  element: HTMLElement;
}

/** How far below the page's top a heading counts as reached, in pixels. */
const READING_LINE = 120;

/** Settings' sections, read from the page's own headings, as a row of links pinned at the top:
 * a long page one click from any part of it. The section in view is marked. */
export function SettingsIndex() {
  const nav = useRef<HTMLElement>(null);
  const [sections, setSections] = useState<Section[]>([]);
  const [current, setCurrent] = useState<HTMLElement | null>(null);
  // A section picked in the index stays marked until the person scrolls themselves: at the end
  // of the page a short last section never reaches the top, and the one above it is still in view.
  const picked = useRef(false);
  useEffect(() => {
    const release = () => (picked.current = false);
    window.addEventListener("wheel", release, { passive: true });
    window.addEventListener("touchmove", release, { passive: true });
    window.addEventListener("keydown", release);
    return () => {
      window.removeEventListener("wheel", release);
      window.removeEventListener("touchmove", release);
      window.removeEventListener("keydown", release);
    };
  }, []);

  useEffect(() => {
    const form = nav.current?.closest("form");
    if (!form) return;
    // A field that takes the focus (Tab, Save's error) may be scrolled only to the window's
    // middle, below the reading line: its section is the one worked in, until the person scrolls.
    const focused = (e: FocusEvent) => {
      const section = e.target instanceof Element ? e.target.closest<HTMLElement>("fieldset.panel") : null;
      if (!section || section.closest("form") !== form || !section.querySelector(":scope > legend")) return;
      picked.current = true;
      setCurrent(section);
    };
    form.addEventListener("focusin", focused);
    const read = () => {
      const found = [...form.querySelectorAll<HTMLElement>("fieldset.panel")].flatMap((f) => {
        const title = f.querySelector(":scope > legend")?.textContent?.trim();
        return title ? [{ title, element: f }] : [];
      });
      setSections((old) => (old.length === found.length && old.every((s, i) => s.element === found[i].element && s.title === found[i].title) ? old : found));
    };
    read();
    // Sections that load later (the MCP servers, About) join the index when they appear.
    const watch = new MutationObserver(read);
    watch.observe(form, { childList: true });
    return () => {
      watch.disconnect();
      form.removeEventListener("focusin", focused);
    };
  }, []);

  // The section being read: the last whose heading has reached the top of the page, give or take
  // a line or two (a section whose tail is still in view is not it, nor one whose heading has
  // only appeared below a short one). At the very end of the page the last section, which may
  // never reach the top.
  useEffect(() => {
    if (sections.length === 0) return;
    let frame = 0;
    // The page's own scrolling area (the app's main pane), not a text box or the sidebar.
    const page: Element | null = nav.current?.closest("main") ?? document.scrollingElement;
    const mark = () => {
      frame = 0;
      if (picked.current || !page) return;
      const line = (page === document.scrollingElement ? 0 : page.getBoundingClientRect().top) + READING_LINE;
      const atEnd = page.scrollHeight > page.clientHeight && page.scrollTop + page.clientHeight >= page.scrollHeight - 2;
      const passed = sections.filter((s) => s.element.getBoundingClientRect().top <= line);
      setCurrent((atEnd ? sections[sections.length - 1] : (passed[passed.length - 1] ?? sections[0])).element);
    };
    const onScroll = (e: Event) => {
      const from = e.target instanceof Element ? e.target : document.scrollingElement;
      if (e.type === "scroll" && from !== page) return;
      if (!frame) frame = requestAnimationFrame(mark);
    };
    mark();
    // Capture: the page may scroll in a container of the window, whose scroll events do not bubble.
    document.addEventListener("scroll", onScroll, { capture: true, passive: true });
    window.addEventListener("scroll", onScroll, { passive: true });
    window.addEventListener("resize", onScroll);
    return () => {
      if (frame) cancelAnimationFrame(frame);
      document.removeEventListener("scroll", onScroll, { capture: true });
      window.removeEventListener("scroll", onScroll);
      window.removeEventListener("resize", onScroll);
    };
  }, [sections]);

  const go = (s: Section) => {
    s.element.scrollIntoView({ block: "start", behavior: "smooth" });
    picked.current = true;
    setCurrent(s.element);
    // The section's first field, so the keyboard goes on from there.
    s.element.querySelector<HTMLElement>("input, select, textarea, button")?.focus({ preventScroll: true });
  };

  return (
    <nav ref={nav} className="settings-index" aria-label="Settings sections" data-testid="settings-index" data-scrolls-itself>
      {sections.map((s) => (
        <button key={s.title} type="button" className="index-link" aria-current={current === s.element ? "true" : undefined} onClick={() => go(s)} data-testid="settings-index-link">
          {s.title}
        </button>
      ))}
    </nav>
  );
}
