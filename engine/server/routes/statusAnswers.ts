/**
 * get-task-status answers, serialised once per task state. The engine answers the same object while a task
 * is unchanged (tasks/statusView.ts), so the bytes are cached by that object's identity. Serialised by the
 * route's own response-schema serialiser (Fastify's, compiled from the contract), so the contract's field
 * filter still applies; the status lane (statusLane.ts) answers with the same bytes.
 */
import type { FastifyReply } from 'fastify';
import { success, type TaskStatusData } from '../../contract/index.js';

export class StatusAnswers {
  private serializer: ((payload: { [key: string]: unknown }) => string) | undefined;
  private readonly bodies = new WeakMap<TaskStatusData, Buffer>();

  /** Takes the route's 200 serialiser from a reply of the route (the first status answer brings it). */
  learn(reply: FastifyReply): void {
    if (this.serializer) return;
    const fn = reply.getSerializationFunction('200');
    if (fn) this.serializer = fn;
  }

  /** Whether answers can be made without a reply (the serialiser is known). */
  get ready(): boolean {
    return this.serializer !== undefined;
  }

  /** The answer's bytes: `{"status":"success","data":…}` as the route's schema writes it. */
  bodyOf(data: TaskStatusData): Buffer {
    let body = this.bodies.get(data);
    if (body === undefined) {
      if (!this.serializer) throw new Error('the status serialiser is not known yet');
      const envelope: { [key: string]: unknown } = { ...success(data) };
      body = Buffer.from(this.serializer(envelope), 'utf8');
      this.bodies.set(data, body);
    }
    return body;
  }
}
