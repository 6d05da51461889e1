import { describe, expect, test } from "bun:test";
import { memoryReclaimer } from "./memory-reclaim";

const MiB = 1024 * 1024;

/** A reclaimer over a fake process: set `rss` and `cpuPerTick`, call `tick`, read what it did. */
function fakeProcess() {
  const state = { rss: 60 * MiB, cpuMicros: 0, cpuPerTick: 0, did: [] as string[] };
  const reclaimer = memoryReclaimer({
    intervalMs: 1000,
    dropCodeAfterMs: 3000,
    growthBytes: 8 * MiB,
    readRss: () => state.rss,
    readCpuMicros: () => state.cpuMicros,
    collect: () => {
      state.did.push("collect");
      state.rss -= 20 * MiB;
    },
    dropCode: () => state.did.push("drop code"),
  });
  const tick = () => {
    state.cpuMicros += state.cpuPerTick;
    reclaimer.tick();
  };
  return { state, tick };
}

describe("memory reclaimer", () => {
  test("does nothing while busy, however much the process grew", () => {
    const { state, tick } = fakeProcess();
    state.cpuPerTick = 400_000;
    state.rss += 60 * MiB;
    for (let i = 0; i < 10; i++) tick();
    expect(state.did).toEqual([]);
  });

  test("collects on the first quiet second after a burst, drops code after a longer quiet, then collects it once", () => {
    const { state, tick } = fakeProcess();
    state.cpuPerTick = 400_000;
    state.rss += 40 * MiB;
    tick();
    state.cpuPerTick = 1_000;
    tick();
    expect(state.did).toEqual(["collect"]);
    tick();
    expect(state.did).toEqual(["collect"]);
    tick();
    expect(state.did).toEqual(["collect", "drop code"]);
    for (let i = 0; i < 10; i++) tick();
    expect(state.did).toEqual(["collect", "drop code", "collect"]);
  });

  test("a quiet process that did not grow is left alone", () => {
    const { state, tick } = fakeProcess();
    state.cpuPerTick = 1_000;
    state.rss += 4 * MiB;
    for (let i = 0; i < 10; i++) tick();
    expect(state.did).toEqual([]);
  });

  test("activity before the code is dropped restarts the quiet period", () => {
    const { state, tick } = fakeProcess();
    state.rss += 40 * MiB;
    state.cpuPerTick = 1_000;
    tick();
    tick();
    state.cpuPerTick = 400_000;
    tick();
    state.cpuPerTick = 1_000;
    tick();
    tick();
    expect(state.did).toEqual(["collect"]);
    tick();
    expect(state.did).toEqual(["collect", "drop code"]);
  });
});
