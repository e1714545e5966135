import type { IncomingMessage, ServerResponse } from "node:http";
import { parse } from "node:url";

export type Handler = (req: IncomingMessage, res: ServerResponse, params: Params) => Promise<void>;

export interface Params {
  [name: string]: string;
}

export enum Method {
  Get = "GET",
  Post = "POST",
}

interface Route {
  method: Method;
  pattern: RegExp;
  keys: string[];
  handler: Handler;
}

/** Matches requests to handlers by method and path pattern. */
export class Router {
  private routes: Route[] = [];

  add(method: Method, path: string, handler: Handler): this {
    const keys: string[] = [];
    const pattern = new RegExp(
      "^" + path.replace(/:(\w+)/g, (_, key: string) => { keys.push(key); return "([^/]+)"; }) + "$",
    );
    this.routes.push({ method, pattern, keys, handler });
    return this;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const path = parse(req.url ?? "/").pathname ?? "/";
    for (const route of this.routes) {
      const match = route.method === req.method && route.pattern.exec(path);
      if (match) {
        await route.handler(req, res, paramsFrom(route.keys, match));
        return true;
      }
    }
    return false;
  }
}

function paramsFrom(keys: string[], match: RegExpExecArray): Params {
  return Object.fromEntries(keys.map((k, i) => [k, decodeURIComponent(match[i + 1])]));
}

export namespace Middleware {
  export function logger(next: Handler): Handler {
    return async (req, res, params) => {
      console.log(req.method, req.url);
      await next(req, res, params);
    };
  }
}
