// ESM ignores NODE_PATH; this hook lets package imports fall back to it, as require() does:
//   NODE_PATH=$C/node_modules node --import ./examples/clients/node-path.mjs script.mjs
import { registerHooks } from "node:module";
import { delimiter } from "node:path";
import { pathToFileURL } from "node:url";

const dirs = (process.env.NODE_PATH ?? "").split(delimiter).filter(Boolean);
const bare = (specifier) => !/^[./]|^[a-z][a-z0-9+.-]*:/i.test(specifier);

registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (error) {
      if (error?.code !== "ERR_MODULE_NOT_FOUND" || !bare(specifier)) throw error;
      for (const dir of dirs) {
        // As if imported from a file in dir: the node_modules lookup then finds dir itself.
        try {
          return nextResolve(specifier, { ...context, parentURL: pathToFileURL(`${dir}/_.mjs`).href });
        } catch {}
      }
      throw error;
    }
  },
});
