/**
 * Events between hub replicas. A cloud-side call may land on one replica while
 * the device is connected to another, so everything that must reach a device
 * goes through the bus: in one process a local emitter, in scale-out Redis
 * pub/sub (both in ../persistence). Every replica (the sender included) receives every event.
 */
import type { TelemetryMessage } from './messages.ts';
import type { FileNotification } from './file-upload.ts';
import type { KeptFeedback } from './service-queue.ts';
import type { JsonObject, JsonValue } from './twin.ts';

export type HubEvent =
  /** New C2D messages for a device: whoever holds it delivers. */
  | { type: 'c2d'; deviceId: string }
  | { type: 'desired'; key: string; patch: JsonObject }
  | { type: 'method-request'; key: string; rid: string; methodName: string; payload: JsonValue; origin: string; timeoutMs: number }
  /** `notSubscribed`: the device is connected but never subscribed to `$iothub/methods/POST/#`. */
  | { type: 'method-response'; rid: string; status: number; payload: JsonValue; origin: string; notSubscribed?: boolean }
  | { type: 'telemetry'; message: Omit<TelemetryMessage, 'seq'> }
  /** A device connected somewhere: older connections of the same identity close. */
  | { type: 'connected'; key: string; connectionId: string }
  /** An identity was deleted or disabled: its connections close. */
  | { type: 'revoked'; key: string }
  /** A C2D message whose sender asked for an acknowledgement was settled: the service side's feedback. */
  | { type: 'feedback'; kept: KeptFeedback }
  /** A device finished a file upload: the service side's file notification. */
  | { type: 'file-notification'; notification: FileNotification };

export type HubEventHandler = (event: HubEvent) => void;

export interface HubBus {
  publish(event: HubEvent): Promise<void>;
  subscribe(handler: HubEventHandler): void;
  close(): Promise<void>;
}
