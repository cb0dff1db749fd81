/**
 * The user API's data: a JSON list of users in `<data-dir>/users/users.json`,
 * seeded with a few users on first start. The file is read at start-up;
 * edit it and restart to change the list.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/files.ts';
import { ConfigError } from '../common/errors.ts';

export interface User {
  id: number;
  username: string;
  name: string;
  email: string;
}

const SEED: User[] = [
  { id: 1, username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' },
  { id: 2, username: 'grace', name: 'Grace Hopper', email: 'grace@example.com' },
  { id: 3, username: 'alan', name: 'Alan Turing', email: 'alan@example.com' },
];

function isUser(value: unknown): value is User {
  const u = value as Record<string, unknown>;
  return (
    typeof u === 'object' &&
    u !== null &&
    Number.isSafeInteger(u.id) &&
    typeof u.username === 'string' &&
    typeof u.name === 'string' &&
    typeof u.email === 'string'
  );
}

export function usersFile(dataDir: string): string {
  return join(dataDir, 'users', 'users.json');
}

/** The stored users; the seed list is written on first start. */
export async function loadUsers(dataDir: string): Promise<User[]> {
  const file = usersFile(dataDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await writeFileAtomic(file, JSON.stringify(SEED, null, 2) + '\n');
    return structuredClone(SEED);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed) || !parsed.every(isUser)) {
    throw new ConfigError(`${file} must hold a JSON array of users ({ id, username, name, email })`);
  }
  return parsed;
}

export function findUser(users: readonly User[], id: string): User | undefined {
  return /^\d{1,15}$/.test(id) ? users.find((u) => u.id === Number(id)) : undefined;
}
