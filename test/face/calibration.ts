/**
 * Measuring each estimator's error by face size on the known faces
 * (known-faces.ts): shared by the calibration test and by
 * bench/face/calibrate.ts, which prints the table of docs/face.md.
 */
import { faceAttributes } from '../../src/face/attributes.ts';
import type { FaceModels, MeasuredFace, Measurements } from '../../src/face/models/index.ts';
import type { Region } from '../../src/face/models/image.ts';
import { embedAtWidth, type KnownFace } from './known-faces.ts';

export const CALIBRATION_WIDTHS = [20, 24, 28, 32, 40, 48, 56, 60, 64, 80] as const;

/** What the table measures; a test may ask for less (every estimator costs CPU per face). */
export const ESTIMATES: Measurements = { mesh: false, ageAndGender: true, emotion: true, glasses: true, mask: false, quality: false, hair: false };

/** The calibration reads the glasses classifiers on every face, the small ones included (the API skips those). */
const RAW_GLASSES = 0;

/** Each face measured at its own size, in its own photo, from its own box. */
export async function measureAtOwnSize(models: FaceModels, faces: readonly KnownFace[], estimates = ESTIMATES): Promise<Map<KnownFace, MeasuredFace>> {
  const out = new Map<KnownFace, MeasuredFace>();
  for (const source of new Set(faces.map((f) => f.source))) {
    const group = faces.filter((f) => f.source === source);
    const measured = await models.measure(
      source,
      group.map((f) => f.box),
      estimates,
      RAW_GLASSES,
    );
    group.forEach((face, i) => out.set(face, measured[i]!));
  }
  return out;
}

export interface CalibrationRow {
  faces: number;
  /** Share of the faces the detector finds in the photo. */
  found: number;
  /** The sunglasses classifier alone (P > 0.5): share of sunglasses seen, of bare faces called sunglasses, and the mean of the two right answers (0.5 = chance). */
  sunglassesTpr: number;
  sunglassesFpr: number;
  balancedAccuracy: number;
  /** What the API answers (`glasses` after its size and confidence rules): Sunglasses on faces with them, and on bare faces. */
  answeredTpr: number;
  answeredFpr: number;
  genderAgrees: number;
  /** Mean absolute difference from the own-size age, years. */
  ageChange: number;
  /** Least-squares slope of these ages on the own-size ages. */
  ageSlope: number;
  /** Standard deviation of these ages over that of the own-size ages. */
  ageSpreadRatio: number;
  smileChange: number;
  /** The measurements, by face, for tests that look closer. */
  measured: Map<KnownFace, MeasuredFace>;
}

/** Faces at least `width` wide at their own size, shrunk to `width`, embedded, detected and measured ('own size': as they are). */
export async function calibrationRow(
  models: FaceModels,
  faces: readonly KnownFace[],
  reference: Map<KnownFace, MeasuredFace>,
  width: number | 'own size',
  estimates = ESTIMATES,
): Promise<CalibrationRow> {
  let used = [...faces];
  let measured = reference;
  let found = 1;
  if (width !== 'own size') {
    used = faces.filter((f) => f.box.width >= width);
    const photo = await embedAtWidth(used, width);
    const detected = await models.detect(photo.image, 500);
    found = photo.boxes.filter((box) => detected.some((d) => sameFace(d, box))).length / Math.max(1, used.length);
    const values = await models.measure(photo.image, photo.boxes, estimates, RAW_GLASSES);
    measured = new Map(used.map((face, i) => [face, values[i]!]));
  }
  const at = (face: KnownFace) => measured.get(face)!;
  const sunglasses = used.filter((f) => f.sunglasses === true);
  const bare = used.filter((f) => f.sunglasses === false);
  const seesSunglasses = (f: KnownFace) => at(f).glasses!.sunglasses > 0.5;
  const answersSunglasses = (f: KnownFace) => faceAttributes(at(f), ['glasses']).glasses === 'Sunglasses';
  const tpr = share(sunglasses, seesSunglasses);
  const fpr = share(bare, seesSunglasses);
  const ages = used.map((f) => at(f).age!);
  const ownAges = used.map((f) => reference.get(f)!.age!);
  return {
    faces: used.length,
    found,
    sunglassesTpr: tpr,
    sunglassesFpr: fpr,
    balancedAccuracy: (tpr + (1 - fpr)) / 2,
    answeredTpr: share(sunglasses, answersSunglasses),
    answeredFpr: share(bare, answersSunglasses),
    genderAgrees: share(
      used.filter((f) => f.gender),
      (f) => at(f).gender === f.gender,
    ),
    ageChange: mean(used.map((f, i) => Math.abs(ages[i]! - ownAges[i]!))),
    ageSlope: slope(ownAges, ages),
    ageSpreadRatio: deviation(ages) / deviation(ownAges),
    smileChange: estimates.emotion ? mean(used.map((f) => Math.abs(at(f).emotion!.happy - reference.get(f)!.emotion!.happy))) : NaN,
    measured,
  };
}

function sameFace(a: Region, b: Region): boolean {
  const dx = a.left + a.width / 2 - (b.left + b.width / 2);
  const dy = a.top + a.height / 2 - (b.top + b.height / 2);
  const ratio = (a.width * a.height) / (b.width * b.height);
  return Math.hypot(dx, dy) < b.width / 2 && ratio > 0.25 && ratio < 4;
}

function share<T>(items: readonly T[], test: (item: T) => boolean): number {
  return items.length ? items.filter(test).length / items.length : NaN;
}

function mean(values: readonly number[]): number {
  return values.length ? values.reduce((s, v) => s + v, 0) / values.length : NaN;
}

function deviation(values: readonly number[]): number {
  const m = mean(values);
  return Math.sqrt(mean(values.map((v) => (v - m) ** 2)));
}

function slope(x: readonly number[], y: readonly number[]): number {
  const mx = mean(x);
  const my = mean(y);
  let covariance = 0;
  let variance = 0;
  x.forEach((xi, i) => {
    covariance += (xi - mx) * (y[i]! - my);
    variance += (xi - mx) ** 2;
  });
  return covariance / variance;
}
