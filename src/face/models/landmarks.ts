/**
 * The Face API's 27 landmarks, each taken from the MediaPipe face mesh point
 * (468 points plus 10 iris points) at the same place on the face, chosen by
 * drawing the mesh's numbered points on a portrait. The API's
 * "left" is the side on the image's left (its pupilLeft has the smaller x on
 * a frontal face), which is the mesh's "right" (the person's right).
 */

export interface Point {
  x: number;
  y: number;
}

export const LANDMARK_NAMES = [
  'pupilLeft',
  'pupilRight',
  'noseTip',
  'mouthLeft',
  'mouthRight',
  'eyebrowLeftOuter',
  'eyebrowLeftInner',
  'eyeLeftOuter',
  'eyeLeftTop',
  'eyeLeftBottom',
  'eyeLeftInner',
  'eyebrowRightInner',
  'eyebrowRightOuter',
  'eyeRightInner',
  'eyeRightTop',
  'eyeRightBottom',
  'eyeRightOuter',
  'noseRootLeft',
  'noseRootRight',
  'noseLeftAlarTop',
  'noseRightAlarTop',
  'noseLeftAlarOutTip',
  'noseRightAlarOutTip',
  'upperLipTop',
  'upperLipBottom',
  'underLipTop',
  'underLipBottom',
] as const;

export type LandmarkName = (typeof LANDMARK_NAMES)[number];
export type FaceLandmarks = Record<LandmarkName, Point>;

/** Mesh index of each landmark but the pupils. */
const MESH_INDEX: Record<Exclude<LandmarkName, 'pupilLeft' | 'pupilRight'>, number> = {
  noseTip: 1,
  mouthLeft: 61,
  mouthRight: 291,
  eyebrowLeftOuter: 70,
  eyebrowLeftInner: 107,
  eyeLeftOuter: 33,
  eyeLeftTop: 159,
  eyeLeftBottom: 145,
  eyeLeftInner: 133,
  eyebrowRightInner: 336,
  eyebrowRightOuter: 300,
  eyeRightInner: 362,
  eyeRightTop: 386,
  eyeRightBottom: 374,
  eyeRightOuter: 263,
  noseRootLeft: 193,
  noseRootRight: 417,
  noseLeftAlarTop: 209,
  noseRightAlarTop: 429,
  noseLeftAlarOutTip: 129,
  noseRightAlarOutTip: 358,
  upperLipTop: 0,
  upperLipBottom: 13,
  underLipTop: 14,
  underLipBottom: 17,
};

/** The two iris centres of a 478-point mesh. */
const IRIS_CENTRES = [468, 473];

export function landmarksFromMesh(mesh: Point[]): FaceLandmarks {
  const at = (index: number): Point => {
    const p = mesh[index];
    if (!p) throw new Error(`face mesh has no point ${index}`);
    return { x: p.x, y: p.y };
  };
  const out = {} as FaceLandmarks;
  for (const [name, index] of Object.entries(MESH_INDEX)) out[name as LandmarkName] = at(index);
  // Each pupil is the iris centre nearer that eye, whatever order the iris model used.
  const eyeLeft = midpoint(out.eyeLeftOuter, out.eyeLeftInner);
  const [a, b] = IRIS_CENTRES.map(at) as [Point, Point];
  const aIsLeft = distance(a, eyeLeft) <= distance(b, eyeLeft);
  out.pupilLeft = aIsLeft ? a : b;
  out.pupilRight = aIsLeft ? b : a;
  const ordered = {} as FaceLandmarks;
  for (const name of LANDMARK_NAMES) ordered[name] = out[name];
  return ordered;
}

function midpoint(a: Point, b: Point): Point {
  return { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
}

function distance(a: Point, b: Point): number {
  return Math.hypot(a.x - b.x, a.y - b.y);
}
