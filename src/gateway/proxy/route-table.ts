/**
 * The compiled route lookup: Kong's priority order (router.ts sorts the
 * candidates) with a cost that does not grow with the number of plain
 * routes. Candidates are grouped by exact host (routes with wildcard hosts
 * or none go to a group every request consults); in each group, plain path
 * prefixes sit in a prefix tree walked once along the request path, and only
 * regex routes and routes without paths are tried one by one. The answer is
 * the candidate of lowest rank (the first in Kong's order) that takes the
 * request, as a scan of the sorted list would find it.
 */
import { matchCandidate, withoutPort, type MatchInput, type RouteCandidate, type RouteMatch } from './router.ts';

/**
 * One node of the prefix tree (a radix tree: each edge holds the run of
 * characters that leads to the node): the candidates whose prefix ends
 * here, by rank, and the children by the first character of their edge.
 */
interface PrefixNode {
  edge: string;
  ranks: number[] | null;
  children: Map<number, PrefixNode> | null;
}

/** Files `rank` under `prefix` below `node`, splitting an edge where the prefix leaves it. */
function insert(node: PrefixNode, prefix: string, from: number, rank: number): void {
  if (from === prefix.length) {
    (node.ranks ??= []).push(rank);
    return;
  }
  const children = (node.children ??= new Map());
  const code = prefix.charCodeAt(from);
  const child = children.get(code);
  if (!child) {
    children.set(code, { edge: prefix.slice(from), ranks: [rank], children: null });
    return;
  }
  let common = 0;
  while (common < child.edge.length && from + common < prefix.length && child.edge.charCodeAt(common) === prefix.charCodeAt(from + common)) common++;
  if (common < child.edge.length) {
    // The new prefix leaves this edge part way: the shared part becomes a node of its own.
    const rest: PrefixNode = { edge: child.edge.slice(common), ranks: child.ranks, children: child.children };
    child.edge = child.edge.slice(0, common);
    child.ranks = null;
    child.children = new Map([[rest.edge.charCodeAt(0), rest]]);
  }
  insert(child, prefix, from + common, rank);
}

/** The candidates of one host group. */
class RouteGroup {
  private readonly root: PrefixNode = { edge: '', ranks: null, children: null };
  /** Regex routes and routes without paths, by rank: tried one by one. */
  private readonly others: number[] = [];

  add(rank: number, candidate: RouteCandidate): void {
    if (candidate.prefix === null) this.others.push(rank);
    else insert(this.root, candidate.prefix, 0, rank);
  }

  /** The best (lowest-rank) candidate of this group below `best.rank` that takes the request; updates `best`. */
  find(candidates: readonly RouteCandidate[], input: MatchInput, best: Best): void {
    const path = input.path;
    let node: PrefixNode | undefined = this.root;
    let at = 0;
    while (node !== undefined) {
      if (node.ranks !== null) firstTaker(node.ranks, candidates, input, best, true);
      if (node.children === null || at >= path.length) break;
      node = node.children.get(path.charCodeAt(at));
      if (node === undefined || !path.startsWith(node.edge, at)) break;
      at += node.edge.length;
    }
    if (this.others.length) firstTaker(this.others, candidates, input, best, false);
  }
}

interface Best {
  rank: number;
  matched: string;
}

/** The first of `ranks` (ascending) below `best.rank` that takes the request. */
function firstTaker(ranks: readonly number[], candidates: readonly RouteCandidate[], input: MatchInput, best: Best, prefixChecked: boolean): void {
  for (const rank of ranks) {
    if (rank >= best.rank) return;
    const matched = matchCandidate(candidates[rank]!, input, prefixChecked);
    if (matched !== null) {
      best.rank = rank;
      best.matched = matched;
      return;
    }
  }
}

export class RouteTable {
  /** Routes every request may match (no hosts, or a wildcard host among them). */
  private readonly anyHost = new RouteGroup();
  /** Routes whose hosts are all exact names, under each of them (lower case, with a port when the route gives one). */
  private readonly byHost = new Map<string, RouteGroup>();

  constructor(readonly candidates: readonly RouteCandidate[]) {
    candidates.forEach((candidate, rank) => {
      const hosts = candidate.hosts;
      if (hosts === null || hosts.wildcards.length > 0) {
        this.anyHost.add(rank, candidate);
        return;
      }
      for (const host of hosts.exact) {
        let group = this.byHost.get(host);
        if (!group) this.byHost.set(host, (group = new RouteGroup()));
        group.add(rank, candidate);
      }
    });
  }

  match(input: MatchInput): RouteMatch | undefined {
    const best: Best = { rank: this.candidates.length, matched: '' };
    if (this.byHost.size > 0 && input.host) {
      const full = input.host.toLowerCase();
      const bare = withoutPort(full);
      this.byHost.get(bare)?.find(this.candidates, input, best);
      if (bare !== full) this.byHost.get(full)?.find(this.candidates, input, best);
    }
    this.anyHost.find(this.candidates, input, best);
    return best.rank < this.candidates.length ? { candidate: this.candidates[best.rank]!, matched: best.matched } : undefined;
  }
}
