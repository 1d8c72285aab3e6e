// A comment half typed on a review's diff, kept for this run of the app: the person may look
// elsewhere and come back to it, and a decision must not pass over it silently. Its own module,
// so the review panel can ask about drafts without loading the diff view.
import type { Range } from "./DiffView";

const PREFIX = "finishline.commentDraft.";

/** Where the draft on a file of a review is kept. */
export const draftKey = (reviewId: string, path: string) => `${PREFIX}${reviewId}.${path}`;

export interface Draft {
  selection: Range | null;
  editing: string | null;
  /** The new comment's words (its box open at `selection`). */
  draft: string;
  /** The words of the added comment being edited (`editing`). */
  editDraft?: string;
  byKeys?: boolean;
}

/** The draft kept for a file of a review, if any (for this run of the app). */
export function readDraft(key: string): Draft | null {
  try {
    return JSON.parse(sessionStorage.getItem(key) ?? "null") as Draft | null;
  } catch {
    return null;
  }
}

/** Drafts the storage refused, so that a decision still finds them. */
const held = new Map<string, Draft>();

export function keepDraft(key: string, d: Draft | null) {
  held.delete(key);
  try {
    if (d) sessionStorage.setItem(key, JSON.stringify(d));
    else sessionStorage.removeItem(key);
  } catch {
    // Storage full or refused: the draft lives as long as the view (and a decision sees it).
    if (d) held.set(key, d);
  }
}

/**
 * The files of a review with a comment typed but not added (its box open with words in it, or
 * kept while its file is folded): only added comments go to the agent, so a decision asks first.
 */
export function unaddedComments(reviewId: string): string[] {
  const prefix = draftKey(reviewId, "");
  const keys = new Set([...held.keys()].filter((k) => k.startsWith(prefix)));
  try {
    for (let i = 0; i < sessionStorage.length; i++) {
      const k = sessionStorage.key(i);
      if (k?.startsWith(prefix)) keys.add(k);
    }
  } catch {
    // No storage: the drafts this view holds are all there are.
  }
  const typed = (d: Draft | null) => !!d && ((d.selection && d.draft.trim()) || (d.editing && d.editDraft?.trim()));
  return [...keys].filter((k) => typed(held.get(k) ?? readDraft(k))).map((k) => k.slice(prefix.length)).sort();
}

