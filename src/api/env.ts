import type { Principal } from '../store/index.js';

/** The one typed environment of the app: request-scoped values set by middleware. */
export interface AppEnv {
  Variables: {
    principal: Principal;
    /** What every URL the API hands out starts with: `--public-url`, else the request's origin. */
    publicBase: string;
  };
}
