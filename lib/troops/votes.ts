/**
 * Counting a consensus troop's votes: how many each answer got and which answers share the most,
 * so the strategy knows whether it has a winner or a tie for the leader to break.
 */

/** Votes per answer, and the answers with the most votes (ascending; one of them is a clear winner). */
export interface Tally {
  counts: number[];
  top: number[];
}

/**
 * Tallies votes over `answers` answers. A choice is a 0-based answer index; a `null` choice (a vote
 * that failed) or one outside `0..answers-1` counts for nothing. With no counted vote at all, every
 * answer ties at zero.
 *
 * @example
 * tallyVotes([{ choice: 1 }, { choice: 0 }, { choice: 1 }], 2); // { counts: [1, 2], top: [1] }
 */
export function tallyVotes(votes: readonly { choice: number | null }[], answers: number): Tally {
  const counts: number[] = Array.from({ length: Math.max(0, answers) }, () => 0);
  for (const { choice } of votes) {
    if (choice !== null && Number.isInteger(choice) && choice >= 0 && choice < counts.length) {
      counts[choice] = (counts[choice] ?? 0) + 1;
    }
  }
  const most = Math.max(...counts);
  const top = counts.flatMap((count, index) => (count === most ? [index] : []));
  return { counts, top };
}
