// Which agent the page selects first (PRD §11.2).
import type { Agent } from '../api/types';

/** The default agent if it manages projects, else the first that does, else the default, else the first. */
export function initialAgent(agents: Agent[]): Agent | undefined {
  return (
    agents.find((a) => a.is_default && a.project_management_enabled) ??
    agents.find((a) => a.project_management_enabled) ??
    agents.find((a) => a.is_default) ??
    agents[0]
  );
}
