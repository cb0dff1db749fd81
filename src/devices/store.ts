/**
 * The device records DevSvc serves (§2.4, §3): a JSON file in the data dir,
 * written atomically, seeded with a few devices on first use. The spec does
 * not show how `active` changes; `offcloud devices add|set-active|remove`
 * edit the file and a running DevSvc reloads it when it changes.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { createFileExclusive, removeStaleTemporaries, withFileLock, writeFileAtomic } from '../common/files.ts';
import { DeviceStoreError } from './errors.ts';
import { validateDeviceName } from './names.ts';

export interface Device {
  name: string;
  active: boolean;
}

/** What a new data dir starts with, so `GET /data/sensor-1` answers true out of the box. */
export const SEED_DEVICES: readonly Device[] = [
  { name: 'sensor-1', active: true },
  { name: 'sensor-2', active: false },
  { name: 'camera-1', active: true },
];

export function deviceFilePath(dataDir: string): string {
  return join(dataDir, 'devices', 'devices.json');
}

function parseDevices(path: string, text: string): Device[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new DeviceStoreError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
  const list = (parsed as { devices?: unknown } | null)?.devices;
  if (!Array.isArray(list)) throw new DeviceStoreError(`${path} must hold {"devices": [{"name": …, "active": …}]}`);
  return list.map((entry: unknown, i) => {
    const { name, active } = (entry ?? {}) as { name?: unknown; active?: unknown };
    if (typeof name !== 'string' || typeof active !== 'boolean') {
      throw new DeviceStoreError(`${path}: devices[${i}] needs a string "name" and a boolean "active"`);
    }
    try {
      return { name: validateDeviceName(name), active };
    } catch (err) {
      throw new DeviceStoreError(`${path}: devices[${i}]: ${(err as Error).message}`);
    }
  });
}

/** The stored devices; a missing file is created with the seed devices unless `seed` is false. */
export async function readDevices(path: string, seed = true): Promise<Device[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !seed) throw err;
    // Created only if still missing: a command's edit made meanwhile is not replaced by the seed.
    await createFileExclusive(path, serializeDevices(SEED_DEVICES), 0o644);
    return readDevices(path, false);
  }
  return parseDevices(path, text);
}

function serializeDevices(devices: readonly Device[]): string {
  return JSON.stringify({ devices }, null, 2) + '\n';
}

/**
 * Reads, changes and writes the device file holding its lock, so that commands
 * editing it at once keep each other's edits. `change` returns the new list
 * (null: nothing to write) and what the edit returns.
 */
async function editDevices<T>(path: string, change: (devices: Device[]) => [Device[] | null, T]): Promise<T> {
  return withFileLock(path, async () => {
    const [next, result] = change(await readDevices(path));
    if (next) await writeFileAtomic(path, serializeDevices(next), 0o644);
    return result;
  });
}

/** Adds a device, or sets the flag of one that exists; returns the stored record. */
export async function addDevice(path: string, name: string, active: boolean): Promise<Device> {
  const device = { name: validateDeviceName(name), active };
  return editDevices(path, (devices) => [[...devices.filter((d) => d.name !== device.name), device], device]);
}

/** Changes the active flag; false when there is no such device. */
export async function setDeviceActive(path: string, name: string, active: boolean): Promise<boolean> {
  return editDevices(path, (devices) => {
    const device = devices.find((d) => d.name === name);
    if (!device) return [null, false];
    device.active = active;
    return [devices, true];
  });
}

/** Removes a device; false when there was none. */
export async function removeDevice(path: string, name: string): Promise<boolean> {
  return editDevices(path, (devices) => {
    const kept = devices.filter((d) => d.name !== name);
    return [kept.length === devices.length ? null : kept, kept.length !== devices.length];
  });
}

/** DevSvc's in-memory view of the file, reloaded whenever the file changes. */
export class DeviceStore {
  private constructor(
    private devices: Map<string, Device>,
    private readonly watcher: FSWatcher,
  ) {}

  static async open(path: string, logger: Logger): Promise<DeviceStore> {
    const toMap = (list: Device[]) => new Map(list.map((d) => [d.name, d]));
    // What `offcloud devices …` killed mid-write left beside the file.
    await removeStaleTemporaries(path);
    const initial = toMap(await readDevices(path));
    let pending: NodeJS.Timeout | undefined;
    let reloads = 0;
    // Watch the folder, not the file: an atomic write replaces the file by rename.
    const watcher = watch(dirname(path), (_event, file) => {
      if (file !== basename(path)) return;
      clearTimeout(pending);
      pending = setTimeout(() => {
        // Reads of edits in quick succession overlap and may end in any order: only the one started last is kept.
        const reload = ++reloads;
        // No seeding here: a file deleted under a running DevSvc is not silently recreated.
        readDevices(path, false).then(
          (list) => {
            if (reload !== reloads) return;
            store.devices = toMap(list);
            logger.info({ devices: list.length }, 'device file reloaded');
          },
          // A hand edit that broke the file keeps the last good records in service.
          (err: unknown) => logger.error({ err }, 'device file not reloaded; keeping the previous records'),
        );
      }, 20);
    });
    watcher.on('close', () => clearTimeout(pending));
    const store = new DeviceStore(initial, watcher);
    return store;
  }

  /** The record for a name, or undefined when there is none (§4.5.1: the caller answers an empty Device). */
  get(name: string): Device | undefined {
    return this.devices.get(name);
  }

  close(): void {
    this.watcher.close();
  }
}
