import { useState, type InputHTMLAttributes } from "react";

/** The largest number a settings box takes unless it says otherwise. */
export const NUMBER_MAX = 100_000_000;

/** A number box that keeps what is typed: it may be emptied, or hold a "-", on the way to a new
 * number (a box that puts the value back while the person types turns "-3" into "03" and "1"
 * into "11"). Every number typed reaches `onChange`, in range or not: the form names one out of
 * range when it is saved, and the box is marked meanwhile. A box left empty, or holding what is
 * no number, stays as it is, marked: putting the last number back as the focus left it made a
 * click on Save store a number the person had not kept ("7x" saved as 7). */
export function NumberInput({ value, onChange, ...given }: { value: number; onChange: (n: number) => void } & Omit<InputHTMLAttributes<HTMLInputElement>, "value" | "onChange" | "type">) {
  // Whole numbers, never empty, and at most what any of them needs: past it the engine's
  // settings would refuse the number in its own terms ("expected u32").
  const rest = { required: true, step: 1, max: NUMBER_MAX, ...given };
  const [text, setText] = useState(String(value));
  // A value from outside (an import, a preset) shows in the same render, not one effect later;
  // one the box itself just reported keeps the text as typed ("-3", "07").
  const [shown, setShown] = useState(value);
  if (value !== shown) {
    setShown(value);
    if (!(text.trim() !== "" && Number(text) === value)) setText(String(value));
  }
  // Out of range or no number: marked as typed, before Save names it.
  const n = Number(text);
  const bad = text.trim() === "" || !Number.isFinite(n) || (rest.min !== undefined && n < Number(rest.min)) || (rest.max !== undefined && n > Number(rest.max));
  return (
    <input
      aria-invalid={bad || undefined}
      {...rest}
      type="number"
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        const n = Number(e.target.value);
        if (e.target.value.trim() !== "" && Number.isFinite(n)) onChange(n);
      }}
    />
  );
}
