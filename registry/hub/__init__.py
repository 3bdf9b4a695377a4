"""The Hugging Face Hub: listings, ranged downloads, resume, push and pull behind the validation gate."""
