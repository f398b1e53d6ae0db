// A Worker for test/unit/worker-call.test.ts: a few methods behind answerCalls, one of them crashing the thread on cue.
import { answerCalls } from "../../src/utils/worker-call.ts";

const build = (init: { greeting: string }) => ({
  hello: (name: string) => `${init.greeting}, ${name}`,
  refuse: () => {
    throw new Error("refused on cue\nwith a second line");
  },
  wait: () => new Promise<never>(() => {}),
  crash: () => {
    setTimeout(() => {
      throw new Error("crashed on cue");
    }, 0);
    return "crashing";
  },
});
export type CallsFixture = ReturnType<typeof build>;

const post = answerCalls(build, (data) => post({ echoed: data }));
