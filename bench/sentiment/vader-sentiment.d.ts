// vader-sentiment ships no typings; this is the one call the benchmark makes.
declare module 'vader-sentiment' {
  const vader: {
    SentimentIntensityAnalyzer: { polarity_scores(text: string): { neg: number; neu: number; pos: number; compound: number } };
  };
  export default vader;
}
