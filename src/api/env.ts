import type { Principal } from '../store/index.js';

/** The one typed environment of the app: request-scoped values set by middleware. */
export interface AppEnv {
  Variables: {
    principal: Principal;
  };
}
