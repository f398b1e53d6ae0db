/**
 * The shape of the browser client: what it remembers, the page's fixed elements, and what each part of it
 * offers the others. Types only: the parts call one another through the assembled client (`app`), so no
 * two of them import each other (the layering rule allows no import cycle).
 */
import type { ViewerSession } from "../api-json.ts";

/** What the client remembers between events. */
export interface ClientState {
  /** Every session, as the last `api/sessions` listed them. */
  sessions: ViewerSession[];
  /** The sessions the filters let through, in list order (what j/k move over). */
  shown: ViewerSession[];
  /** The open session's id (its directory when it has none), else null. */
  current: string | null;
  /** The open session's directory: live batches for it are appended. */
  dir: string | null;
  /** The uuid the shown conversation ends at: a live record whose parent it is continues it. */
  tail: string | null;
  /** The search as last run ("" when none): its terms are marked in a record jumped to. */
  query: string;
}

/** The page's fixed elements (viewerPage in ../page.ts), looked up once. */
export interface ClientUi {
  back: HTMLButtonElement;
  live: HTMLElement;
  search: HTMLInputElement;
  project: HTMLSelectElement;
  when: HTMLSelectElement;
  day: HTMLInputElement;
  totals: HTMLElement;
  /** What the tap forwarded without mirroring (docs/DESIGN.md "Nothing forwarded unseen"), from its health. */
  unseen: HTMLElement;
  sessions: HTMLUListElement;
  results: HTMLUListElement;
  main: HTMLElement;
  facts: HTMLElement;
  conversation: HTMLElement;
}

/** What the client reads of `/_tap/health`: the lines saying what was forwarded and not mirrored. */
export interface HealthUnseen {
  mirror?: { notMirrored?: { shapes?: { said?: string }[] } } | string;
}

/** The session list, its filters (project and date) and totals. */
export interface SessionList {
  /** Whether the filters let `s` through. */
  passes(s: ViewerSession): boolean;
  /** Fetches the list and redraws it (and the open session's guard banner). */
  loadSessions(): Promise<void>;
  /** Redraws the list from the state, as filtered. */
  renderSessions(): void;
}

/** One session open in the main column. */
export interface SessionView {
  /** Fetches and shows session `id`, scrolled to record `uuid` when given, else to the end. */
  showSession(id: string, uuid?: string | null): Promise<void>;
  /** Makes server HTML the client's own: local times, tool results inside their calls' pairs. */
  settle(root: Element): void;
  /** Marks a node as new for a few seconds. */
  flash(node: Element): void;
}

/** The "Restore into Claude Code" panel of an open session. */
export interface RestorePanel {
  /** The panel for `s`: a button that shows a dry run first. */
  restorePanel(s: ViewerSession): HTMLElement;
}

/** Search across sessions. */
export interface Search {
  /** Wraps each match of the query's terms in the text under `root` in <mark>. */
  highlight(root: Element, q: string): void;
  /** The search box changed: searches once typing pauses. */
  onSearch(): void;
  /** Runs the search in the box now and shows its hits (or the list again when the box is empty). */
  runSearch(): Promise<void>;
}

/** New records as the tap writes them. */
export interface LiveRecords {
  /** Opens the event stream: shows its state, and each batch of records in the open conversation. */
  listen(): void;
  /** A handler for a background refresh that failed: the page says so where the live state shows, never silently. */
  failed(what: string): (error: unknown) => void;
}

/** The hash, the back button, the keyboard. */
export interface Navigation {
  /** Shows what the hash names: a session (and a record in it), else the list. */
  route(): void;
  /** Leaves the open session for the list, keyboard focus on the list. */
  backToList(): void;
  /** The page's keys: j/k or the arrows between sessions, / to search, Escape back. */
  onKey(e: KeyboardEvent): void;
}

/** The whole client: its state and elements, and every part's functions. */
export interface ViewerApp extends SessionList, SessionView, RestorePanel, Search, LiveRecords, Navigation {
  state: ClientState;
  ui: ClientUi;
}

/** The parts the entry assembles, each a function given the whole client. */
export interface ClientParts {
  list(app: ViewerApp): SessionList;
  session(app: ViewerApp): SessionView;
  restore(app: ViewerApp): RestorePanel;
  search(app: ViewerApp): Search;
  live(app: ViewerApp): LiveRecords;
  navigation(app: ViewerApp): Navigation;
}
