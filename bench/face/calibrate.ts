/**
 * The calibration curve of the attribute models against face width: every known face (test/face/known-faces.ts)
 * shrunk to each width, re-embedded in a photo, found by the detector and
 * measured by each estimator; printed as the table docs/face.md carries.
 *
 *   npx tsx bench/face/calibrate.ts            (about 2 minutes of CPU)
 *
 * Columns: faces measured at that width (only faces at least that wide at
 * their own size: nothing is enlarged); share the detector finds; sunglasses
 * classifier: share of sunglasses seen (TPR) and of bare faces called
 * sunglasses (FPR), and the balanced accuracy (0.5 = chance); what the API
 * answers after its rules (glasses only on faces ≥ 60 px, classifier over
 * 0.9): Sunglasses on faces with them / on bare faces; gender agreeing
 * with the label; age: mean absolute change from the face's own-size
 * estimate, the slope of shrunk on own-size ages (1 = ages keep their spread,
 * 0 = every face gets one value) and the spread ratio; smile (happiness):
 * mean absolute change.
 */
import { FaceModels } from '../../src/face/models/index.ts';
import { calibrationRow, CALIBRATION_WIDTHS, measureAtOwnSize } from '../../test/face/calibration.ts';
import { defaultModelPaths } from '../../test/face/container.ts';
import { knownFaces } from '../../test/face/known-faces.ts';

const models = await FaceModels.load(defaultModelPaths());
const faces = await knownFaces(models);
const reference = await measureAtOwnSize(models, faces);
console.log(
  `known faces: ${faces.length} (${faces.filter((f) => f.sunglasses).length} with sunglasses, ${faces.filter((f) => f.sunglasses === false).length} without)`,
);
console.log(
  '| face width (px) | faces | found by detector | sunglasses TPR | sunglasses FPR | balanced accuracy | answered Sunglasses: with / bare | gender agrees | age change (years) | age slope | age spread ratio | smile change |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const width of [...CALIBRATION_WIDTHS, 'own size' as const]) {
  const row = await calibrationRow(models, faces, reference, width);
  const pct = (x: number) => (Number.isNaN(x) ? '–' : `${Math.round(x * 100)} %`);
  const num = (x: number, digits: number) => (Number.isNaN(x) ? '–' : x.toFixed(digits));
  console.log(
    `| ${width} | ${row.faces} | ${pct(row.found)} | ${pct(row.sunglassesTpr)} | ${pct(row.sunglassesFpr)} | ${num(row.balancedAccuracy, 2)} | ${pct(row.answeredTpr)} / ${pct(row.answeredFpr)} | ${pct(row.genderAgrees)} | ${num(row.ageChange, 1)} | ${num(row.ageSlope, 2)} | ${num(row.ageSpreadRatio, 2)} | ${num(row.smileChange, 2)} |`,
  );
}
