/**
 * Tier 3 headless (`mappa train --tier-person FILE|-`): a person, or a teacher's script, answers the
 * questions a coach in tiers asks (src/core/coach/person-tier.ts: what is asked, the answer format, the
 * wait). The questions are appended, one JSON line each, to <out>/questions.jsonl, and with `-` also
 * printed on stdout (each line a JSON object with "id", "tier1", "tier2"); the answers are read from
 * FILE as it grows (read from its start: answers written before their question count) or from stdin.
 * While it waits the run says so on stderr in one line: which questions, where, the format, how long.
 * A line that is not an answer is refused on stderr naming it ("answers.jsonl line 3: ..."); the
 * question stays open. At the wait's end (coach.tiers.personWait seconds), or at stdin's end, a
 * question still open is unanswered and tier 2's score stands.
 *
 * For: src/cli/train.ts. Not for: what is asked or how an answer counts (person-tier.ts, tiered-coach.ts).
 * Example: const p = linePerson('-', 'runs/x', (l) => process.stderr.write(l + '\n'));
 *          await p.ask([question 1-3], 120)   // stdout: {"id":"1-3",...}; stdin: 1-3 7  -> Map {'1-3' => 7}
 *          p.close()
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { AnswerBoard, type Person, type PersonAnswers, type PersonQuestion } from '../core/coach/person-tier.ts';
import { CliError } from './common.ts';

/** What `--tier-person` names checked before any work: `-` (stdin) or a file that exists. */
export function checkPersonFlag(flag: string): void {
  if (flag !== '-' && !existsSync(flag)) {
    throw new CliError(`--tier-person ${flag}: no such file; create it (it may be empty: answers are read as it grows) or give - for stdin`);
  }
}

export interface LinePerson extends Person {
  /** Stops reading (stdin's reader would keep the process alive). */
  close(): void;
}

/** The person answering in `flag` (a file, or `-`: stdin), its questions written to <out>/questions.jsonl; `log` writes a line on stderr. */
export function linePerson(flag: string, out: string, log: (line: string) => void, stdin: NodeJS.ReadableStream = process.stdin,
  stdout: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): LinePerson {
  const board = new AnswerBoard();
  const where = flag === '-' ? 'stdin' : flag;
  const offer = (line: string, n: number) => {
    const refused = board.offer(line);
    if (refused) log(`${where} line ${n}: ${refused}; line refused, the question stays open`);
  };
  let reader: Interface | null = null;
  let stdinLines = 0;
  let fileLines = 0;
  /** A file's complete lines not read yet (a line being written, without its newline, waits). */
  const readFile = () => {
    let text: string;
    try {
      text = readFileSync(flag, 'utf8');
    } catch {
      return; // moved away for a moment (an editor saving it): read at the next poll
    }
    const lines = text.split('\n');
    lines.pop();
    for (; fileLines < lines.length; fileLines++) offer(lines[fileLines], fileLines + 1);
  };
  const questionsFile = path.join(out, 'questions.jsonl');
  return {
    name: where,
    async ask(questions: PersonQuestion[], waitSeconds: number): Promise<PersonAnswers> {
      mkdirSync(out, { recursive: true });
      appendFileSync(questionsFile, questions.map((q) => `${JSON.stringify(q)}\n`).join(''));
      if (flag === '-') {
        for (const q of questions) stdout(JSON.stringify(q));
        if (!reader && !board.isClosed) {
          reader = createInterface({ input: stdin, crlfDelay: Infinity });
          reader.on('line', (line) => offer(line, ++stdinLines));
          reader.on('close', () => board.close());
        }
      }
      const ids = questions.map((q) => q.id);
      const first = ids[0];
      const shown = `${questionsFile}${flag === '-' ? ' and on stdout' : ''}`;
      log(`tier 3: waiting for a person's answers to ${ids.length} question${ids.length > 1 ? 's' : ''} (${ids.join(', ')}; in ${shown}) `
        + `in ${where}: one line each, {"id": "${first}", "score": 0..10}, {"id": "${first}", "skip": true} or "${first} 7"; `
        + `at most ${waitSeconds} s (coach.tiers.personWait), then a question still open is unanswered and tier 2's score stands`
        + (board.isClosed ? ' (stdin has ended: none can come)' : ''));
      const poll = flag === '-' ? null : setInterval(readFile, 200);
      if (flag !== '-') readFile();
      const answers = await board.wait(ids, waitSeconds);
      if (poll) clearInterval(poll);
      const scored = [...answers.values()].filter((a) => a !== null).length;
      log(`tier 3: ${scored} answered, ${answers.size - scored} skipped, ${ids.length - answers.size} unanswered`);
      return answers;
    },
    close() {
      reader?.close();
      if (flag === '-' && 'pause' in stdin) (stdin as NodeJS.ReadStream).pause();
    },
  };
}
