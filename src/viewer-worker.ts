// The viewer's reader thread, started the first time the viewer is used: docs/DESIGN.md "Off the relay path".
import { nodeFs } from "./storage/fs-adapter.ts";
import { answerCalls } from "./utils/worker-call.ts";
import { type ReaderSettings, ViewerData } from "./viewer/api.ts";

const post = answerCalls((settings: ReaderSettings) => new ViewerData(nodeFs, settings, (note) => post(note)));
