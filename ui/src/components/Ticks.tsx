/** Text from the engine in which `quoted` parts are commands, names or paths (as the CLI prints
 * them): shown as code, as React text, never as markup. Unpaired backticks are left as they are. */
export function Ticks({ text }: { text: string }) {
  const parts = text.split("`");
  if (parts.length < 3 || parts.length % 2 === 0) return <>{text}</>;
  return <>{parts.map((p, i) => (i % 2 ? <code key={i}>{p}</code> : p))}</>;
}
