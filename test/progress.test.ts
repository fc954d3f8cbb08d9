/**
 * The CLI's progress bar, written to a recording stream with a clock the test moves.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createProgressBar } from '../src/cli/progress.js';

function recorder(isTTY: boolean) {
  const written: string[] = [];
  const stream = { isTTY, write: (text: string) => written.push(text) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, written };
}

test('a line every 10 % off a terminal, with the time taken and, past the start, the time left', () => {
  let now = 1_000_000;
  const { stream, written } = recorder(false);
  const bar = createProgressBar(stream, 'song ', () => now);
  bar.update(2, 'decode');
  now += 3_000;
  bar.update(5, 'decode'); // same decile: nothing
  now += 17_000;
  bar.update(20, 'separate');
  now += 60_000;
  bar.update(98, 'encode'); // about 1.6 s left: too little to say
  bar.update(100, 'encode');
  bar.done('song: 4 stems');
  assert.deepEqual(written, [
    'song   0% decode  0:00\n',
    'song  20% separate  0:20, about 1:20 left\n',
    'song  90% encode  1:20\n',
    'song 100% encode  1:20\n',
    'song: 4 stems\n',
  ]);
});

test('on a terminal the bar is redrawn in place and cleared at the end; hours show as h:mm:ss', () => {
  let now = 0;
  const { stream, written } = recorder(true);
  const bar = createProgressBar(stream, '', () => now);
  now = 3_723_000;
  bar.update(50, 'separate');
  bar.update(50, 'separate'); // unchanged: not drawn again
  bar.done();
  assert.deepEqual(written, [`\r[${'#'.repeat(15)}${'-'.repeat(15)}]  50% separate  1:02:03, about 1:02:03 left\x1b[K`, '\r\x1b[K']);
});
