export { type UuidV7Sources, uuidV7Generator, uuidv7 } from './uuidv7.js';
