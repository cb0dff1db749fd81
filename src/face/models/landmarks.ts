/**
 * The Face API's 27 landmarks, each taken from the MediaPipe face mesh point
 * (468 points) at the same place on the face, chosen by drawing the mesh's
 * numbered points on a portrait; a pupil is the centre of its eye's
 * outline (the mesh's 16 eyelid points). The API's
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

/** The eyelid outline of each eye, on the image's left and right (MediaPipe numbering). */
const EYE_OUTLINES = {
  left: [33, 7, 163, 144, 145, 153, 154, 155, 133, 173, 157, 158, 159, 160, 161, 246],
  right: [263, 249, 390, 373, 374, 380, 381, 382, 362, 398, 384, 385, 386, 387, 388, 466],
};

export function landmarksFromMesh(mesh: Point[]): FaceLandmarks {
  const at = (index: number): Point => {
    const p = mesh[index];
    if (!p) throw new Error(`face mesh has no point ${index}`);
    return { x: p.x, y: p.y };
  };
  const out = {} as FaceLandmarks;
  for (const [name, index] of Object.entries(MESH_INDEX)) out[name as LandmarkName] = at(index);
  out.pupilLeft = centre(EYE_OUTLINES.left.map(at));
  out.pupilRight = centre(EYE_OUTLINES.right.map(at));
  const ordered = {} as FaceLandmarks;
  for (const name of LANDMARK_NAMES) ordered[name] = out[name];
  return ordered;
}

function centre(points: Point[]): Point {
  return { x: points.reduce((s, p) => s + p.x, 0) / points.length, y: points.reduce((s, p) => s + p.y, 0) / points.length };
}
