import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A worker thread running the module `name` of `folder` (beside the caller, whose
 * `import.meta.url` is `self`). From dist/ (or the bundled command) that is the compiled .js
 * file: `../<folder>/` reaches it from dist/<folder>/ and from the bundle in dist/bundle/. From
 * source (the tests run .ts under tsx), Node 20 does not pass tsx's loader hooks on to worker
 * threads, so the worker registers tsx itself before importing the .ts file. `options`: the
 * thread's own (`resourceLimits`), never `eval`.
 */
export function startWorker(self: string, folder: string, name: string, options: Omit<WorkerOptions, 'eval'> = {}): Worker {
  if (!self.endsWith('.ts')) return new Worker(new URL(`../${folder}/${name}.js`, self), options);
  const entry = new URL(`./${name}.ts`, self).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  return new Worker(`import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(entry)}); });`, { ...options, eval: true });
}
