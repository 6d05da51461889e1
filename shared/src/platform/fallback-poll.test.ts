import { expect, test } from "bun:test";
import { FallbackPoll } from "./fallback-poll";

test("W6, H3: an idle fallback poll waits twice as long each time up to its cap, and polls every base interval again once work is found", async () => {
  const polls: number[] = [];
  const started = performance.now();
  const poll = new FallbackPoll(() => polls.push(performance.now() - started), 20, 80);
  poll.start();
  await Bun.sleep(400);
  // 20, 60 (+40), 140 (+80), 220, 300, 380: the waits double to the cap and stay there.
  expect(polls.length).toBeGreaterThanOrEqual(4);
  expect(polls.length).toBeLessThanOrEqual(7);
  expect(poll.waitMs).toBe(80);
  poll.busy();
  expect(poll.waitMs).toBe(20);
  const before = polls.length;
  await Bun.sleep(30);
  expect(polls.length).toBe(before + 1);
  poll.stop();
  const stopped = polls.length;
  await Bun.sleep(200);
  expect(polls.length).toBe(stopped);
});

test("H3: a retry this process scheduled is polled for at its time, not at the idle poll's", async () => {
  const polls: number[] = [];
  const started = performance.now();
  const poll = new FallbackPoll(() => polls.push(performance.now() - started), 1000, 8000);
  poll.start();
  poll.wakeIn(50);
  await Bun.sleep(150);
  expect(polls.length).toBe(1);
  expect(polls[0]).toBeGreaterThanOrEqual(45);
  // The wake counts as work: the next poll comes after the base interval, not the grown one.
  expect(poll.waitMs).toBe(1000);
  poll.stop();
});
