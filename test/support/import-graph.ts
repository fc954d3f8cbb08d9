/**
 * The import graph of the TypeScript files under a folder, and the cycles in it. Every import counts: static,
 * type-only and dynamic (`await import(...)`), since each says the importer sits above what it imports, and the
 * project's rule is that every file imports only downward. Only relative imports between the folder's own files
 * are edges; packages and `node:` modules are leaves.
 */
import { readdirSync, readFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { tempDir } from './temp-dir.js';

/** Files (relative to the root, `/`-separated) each file imports. */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

export function importGraph(root: string): ImportGraph {
  const files = sourceFiles(root);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const full = path.join(root, file);
    const targets = moduleSpecifiers(full)
      .map((spec) => resolveRelative(root, file, spec))
      .filter((target): target is string => target !== undefined);
    graph.set(file, [...new Set(targets)].sort());
  }
  return graph;
}

/**
 * Every cycle's strongly connected component (Tarjan), each as its files sorted, plus one concrete cycle through
 * it (a path that comes back to its first file) to show how it closes.
 */
export interface ImportCycle {
  readonly files: readonly string[];
  readonly path: readonly string[];
}

export function importCycles(graph: ImportGraph): ImportCycle[] {
  return stronglyConnected(graph)
    .filter((component) => component.length > 1 || (graph.get(component[0] ?? '') ?? []).includes(component[0] ?? ''))
    .map((component) => ({ files: [...component].sort(), path: cycleThrough(graph, new Set(component)) }))
    .sort((a, b) => (a.files[0] ?? '').localeCompare(b.files[0] ?? ''));
}

function sourceFiles(root: string, dir = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sourceFiles(root, rel));
    else if (/\.ts$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out.sort();
}

/** The specifiers of a file's import and export-from declarations and of its `import(...)` calls and types. */
function moduleSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const specs: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      specs.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [first] = node.arguments;
      if (first !== undefined && ts.isStringLiteral(first)) specs.push(first.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specs.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specs;
}

/** `./x.js` from `a/b.ts` → `a/x.ts` (or `a/x/index.ts`); undefined for packages and files outside the root. */
function resolveRelative(root: string, from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const joined = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  if (joined.startsWith('..')) return undefined;
  const base = joined.replace(/\.(js|ts)$/, '');
  for (const candidate of [`${base}.ts`, `${base}/index.ts`]) {
    if (existsSync(path.join(root, candidate))) return candidate;
  }
  return undefined;
}

function stronglyConnected(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  const connect = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        connect(target);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(target) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    components.push(component);
  };
  for (const node of graph.keys()) if (!index.has(node)) connect(node);
  return components;
}

/** The shortest way from the component's first file back to itself, staying inside the component (breadth first). */
function cycleThrough(graph: ImportGraph, component: ReadonlySet<string>): string[] {
  const start = [...component].sort()[0] ?? '';
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift() ?? '';
    for (const target of graph.get(node) ?? []) {
      if (!component.has(target)) continue;
      if (target === start) {
        const way = [start];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = cameFrom.get(at)) way.splice(1, 0, at);
        return [...way, start];
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  return [start];
}

/** A scratch source tree of `files` (path → text), to show an import check catches what it must. */
export function scratchTree(files: Readonly<Record<string, string>>, prefix = 'stemsplit-imports-'): string {
  const root = tempDir(prefix);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.join(root, file, '..'), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

/** Two top-level folders of the graph's root that import each other, directly: a pair of folders in a circle. */
export interface FolderCycle {
  readonly folders: readonly [string, string];
  /** One import each way that closes it: `from → to`. */
  readonly imports: readonly [string, string];
}

/** The pairs of top-level folders where each imports the other (files at the root count as no folder). */
export function folderCycles(graph: ImportGraph): FolderCycle[] {
  const folderOf = (file: string): string | undefined => (file.includes('/') ? file.split('/')[0] : undefined);
  const crossing = new Map<string, string>();
  for (const [file, targets] of graph) {
    for (const target of targets) {
      const from = folderOf(file);
      const to = folderOf(target);
      if (from === undefined || to === undefined || from === to) continue;
      const key = `${from}\0${to}`;
      if (!crossing.has(key)) crossing.set(key, `${file} → ${target}`);
    }
  }
  const cycles: FolderCycle[] = [];
  for (const [key, forward] of crossing) {
    const [from = '', to = ''] = key.split('\0');
    const back = crossing.get(`${to}\0${from}`);
    if (back !== undefined && from < to) cycles.push({ folders: [from, to], imports: [forward, back] });
  }
  return cycles.sort((a, b) => a.folders.join('/').localeCompare(b.folders.join('/')));
}

/**
 * The graph of top-level folders (files at the root count as no folder): a folder imports another when one of
 * its files imports one of the other's. Its import cycles are the folders in a circle, of any length.
 */
export function folderGraph(graph: ImportGraph): ImportGraph {
  const folderOf = (file: string): string | undefined => (file.includes('/') ? file.split('/')[0] : undefined);
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    if (from === undefined) continue;
    const imported = folders.get(from) ?? new Set<string>();
    folders.set(from, imported);
    for (const target of targets) {
      const to = folderOf(target);
      if (to !== undefined && to !== from) imported.add(to);
    }
  }
  return new Map([...folders].map(([folder, imported]) => [folder, [...imported].sort()]));
}
